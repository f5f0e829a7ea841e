// AVX512-FP16 probe: 12 chains of zmm vfmadd231ph (32 half FMAs per instruction; the
// converging recurrence acc = acc * m + c keeps the halves finite and normal).
#include <immintrin.h>

#include "hw/peak/peak_probes.h"

namespace dlas::peak_detail {

float unit_probe_fp16(int64_t iters) {
  static_assert(kChains == 12, "the body below names 12 accumulators");
  __m512h a0 = _mm512_set1_ph(static_cast<_Float16>(0.5f)), a1 = a0, a2 = a0, a3 = a0;
  __m512h a4 = a0, a5 = a0, a6 = a0, a7 = a0, a8 = a0, a9 = a0, a10 = a0, a11 = a0;
  __m512h m = _mm512_set1_ph(static_cast<_Float16>(0.99f));
  __m512h c = _mm512_set1_ph(static_cast<_Float16>(0.01f));
  asm volatile("" : "+v"(m), "+v"(c));
  for (int64_t it = 0; it < iters; ++it) {
    a0 = _mm512_fmadd_ph(a0, m, c);
    a1 = _mm512_fmadd_ph(a1, m, c);
    a2 = _mm512_fmadd_ph(a2, m, c);
    a3 = _mm512_fmadd_ph(a3, m, c);
    a4 = _mm512_fmadd_ph(a4, m, c);
    a5 = _mm512_fmadd_ph(a5, m, c);
    a6 = _mm512_fmadd_ph(a6, m, c);
    a7 = _mm512_fmadd_ph(a7, m, c);
    a8 = _mm512_fmadd_ph(a8, m, c);
    a9 = _mm512_fmadd_ph(a9, m, c);
    a10 = _mm512_fmadd_ph(a10, m, c);
    a11 = _mm512_fmadd_ph(a11, m, c);
    asm volatile("" : "+v"(a0), "+v"(a1), "+v"(a2), "+v"(a3), "+v"(a4), "+v"(a5));
    asm volatile("" : "+v"(a6), "+v"(a7), "+v"(a8), "+v"(a9), "+v"(a10), "+v"(a11));
  }
  const __m512h s =
      _mm512_add_ph(_mm512_add_ph(_mm512_add_ph(_mm512_add_ph(a0, a1), _mm512_add_ph(a2, a3)),
                                  _mm512_add_ph(_mm512_add_ph(a4, a5), _mm512_add_ph(a6, a7))),
                    _mm512_add_ph(_mm512_add_ph(a8, a9), _mm512_add_ph(a10, a11)));
  return static_cast<float>(_mm512_reduce_add_ph(s));
}

}  // namespace dlas::peak_detail

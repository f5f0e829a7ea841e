// AVX512-FP16 probe: 12 chains of zmm vfmadd231ph (32 half FMAs per instruction; the
// converging recurrence acc = acc * m + c keeps the halves finite and normal).
#include <immintrin.h>

#include "hw/peak/peak_fma.h"

namespace dlas::peak_detail {

float unit_probe_fp16(int64_t iters) {
  __m512h m = _mm512_set1_ph(static_cast<_Float16>(0.99f));
  __m512h c = _mm512_set1_ph(static_cast<_Float16>(0.01f));
  asm volatile("" : "+v"(m), "+v"(c));
  const __m512h s = unit_chains(
      iters, _mm512_set1_ph(static_cast<_Float16>(0.5f)),
      [&](__m512h a) { return _mm512_fmadd_ph(a, m, c); },
      [](__m512h a, __m512h b) { return _mm512_add_ph(a, b); });
  return static_cast<float>(_mm512_reduce_add_ph(s));
}

}  // namespace dlas::peak_detail

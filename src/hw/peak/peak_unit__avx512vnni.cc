// AVX512-VNNI int8 probe: 12 chains of zmm vpdpbusd (64 u8 x s8 products per instruction,
// int32 accumulators; wrapping is harmless, only the rate counts).
#include <immintrin.h>

#include "hw/peak/peak_probes.h"

namespace dlas::peak_detail {

float unit_probe_vnni_int8(int64_t iters) {
  static_assert(kChains == 12, "the body below names 12 accumulators");
  __m512i a0 = _mm512_set1_epi32(1), a1 = a0, a2 = a0, a3 = a0, a4 = a0, a5 = a0;
  __m512i a6 = a0, a7 = a0, a8 = a0, a9 = a0, a10 = a0, a11 = a0;
  __m512i x = _mm512_set1_epi8(3), w = _mm512_set1_epi8(-2);
  asm volatile("" : "+v"(x), "+v"(w));
  for (int64_t it = 0; it < iters; ++it) {
    a0 = _mm512_dpbusd_epi32(a0, x, w);
    a1 = _mm512_dpbusd_epi32(a1, x, w);
    a2 = _mm512_dpbusd_epi32(a2, x, w);
    a3 = _mm512_dpbusd_epi32(a3, x, w);
    a4 = _mm512_dpbusd_epi32(a4, x, w);
    a5 = _mm512_dpbusd_epi32(a5, x, w);
    a6 = _mm512_dpbusd_epi32(a6, x, w);
    a7 = _mm512_dpbusd_epi32(a7, x, w);
    a8 = _mm512_dpbusd_epi32(a8, x, w);
    a9 = _mm512_dpbusd_epi32(a9, x, w);
    a10 = _mm512_dpbusd_epi32(a10, x, w);
    a11 = _mm512_dpbusd_epi32(a11, x, w);
    asm volatile("" : "+v"(a0), "+v"(a1), "+v"(a2), "+v"(a3), "+v"(a4), "+v"(a5));
    asm volatile("" : "+v"(a6), "+v"(a7), "+v"(a8), "+v"(a9), "+v"(a10), "+v"(a11));
  }
  const __m512i s = _mm512_add_epi32(
      _mm512_add_epi32(_mm512_add_epi32(_mm512_add_epi32(a0, a1), _mm512_add_epi32(a2, a3)),
                       _mm512_add_epi32(_mm512_add_epi32(a4, a5), _mm512_add_epi32(a6, a7))),
      _mm512_add_epi32(_mm512_add_epi32(a8, a9), _mm512_add_epi32(a10, a11)));
  return static_cast<float>(_mm512_reduce_add_epi32(s));
}

}  // namespace dlas::peak_detail

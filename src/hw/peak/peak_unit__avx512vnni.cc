// AVX512-VNNI int8 probe: 12 chains of zmm vpdpbusd (64 u8 x s8 products per instruction,
// int32 accumulators; wrapping is harmless, only the rate counts).
#include <immintrin.h>

#include "hw/peak/peak_fma.h"

namespace dlas::peak_detail {

float unit_probe_vnni_int8(int64_t iters) {
  __m512i x = _mm512_set1_epi8(3), w = _mm512_set1_epi8(-2);
  asm volatile("" : "+v"(x), "+v"(w));
  const __m512i s = unit_chains(
      iters, _mm512_set1_epi32(1), [&](__m512i a) { return _mm512_dpbusd_epi32(a, x, w); },
      [](__m512i a, __m512i b) { return _mm512_add_epi32(a, b); });
  return static_cast<float>(_mm512_reduce_add_epi32(s));
}

}  // namespace dlas::peak_detail

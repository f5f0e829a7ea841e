// AVX512-BF16 probe: 12 chains of zmm vdpbf16ps (32 bf16 products per instruction, f32
// accumulators that stay finite over any probe length).
#include <immintrin.h>

#include "hw/peak/peak_fma.h"

namespace dlas::peak_detail {

float unit_probe_bf16_dot(int64_t iters) {
  __m512bh x = _mm512_cvtne2ps_pbh(_mm512_set1_ps(1e-3f), _mm512_set1_ps(1e-3f));
  __m512bh w = _mm512_cvtne2ps_pbh(_mm512_set1_ps(-1e-3f), _mm512_set1_ps(-1e-3f));
  asm volatile("" : "+v"(x), "+v"(w));
  const __m512 s = unit_chains(
      iters, _mm512_set1_ps(0.5f), [&](__m512 a) { return _mm512_dpbf16_ps(a, x, w); },
      [](__m512 a, __m512 b) { return _mm512_add_ps(a, b); });
  return _mm512_reduce_add_ps(s);
}

}  // namespace dlas::peak_detail

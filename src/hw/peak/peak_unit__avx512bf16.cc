// AVX512-BF16 probe: 12 chains of zmm vdpbf16ps (32 bf16 products per instruction, f32
// accumulators; the converging recurrence keeps them finite).
#include <immintrin.h>

#include "hw/peak/peak_probes.h"

namespace dlas::peak_detail {

float unit_probe_bf16_dot(int64_t iters) {
  static_assert(kChains == 12, "the body below names 12 accumulators");
  __m512 a0 = _mm512_set1_ps(0.5f), a1 = a0, a2 = a0, a3 = a0, a4 = a0, a5 = a0;
  __m512 a6 = a0, a7 = a0, a8 = a0, a9 = a0, a10 = a0, a11 = a0;
  __m512bh x = _mm512_cvtne2ps_pbh(_mm512_set1_ps(1e-3f), _mm512_set1_ps(1e-3f));
  __m512bh w = _mm512_cvtne2ps_pbh(_mm512_set1_ps(-1e-3f), _mm512_set1_ps(-1e-3f));
  asm volatile("" : "+v"(x), "+v"(w));
  for (int64_t it = 0; it < iters; ++it) {
    a0 = _mm512_dpbf16_ps(a0, x, w);
    a1 = _mm512_dpbf16_ps(a1, x, w);
    a2 = _mm512_dpbf16_ps(a2, x, w);
    a3 = _mm512_dpbf16_ps(a3, x, w);
    a4 = _mm512_dpbf16_ps(a4, x, w);
    a5 = _mm512_dpbf16_ps(a5, x, w);
    a6 = _mm512_dpbf16_ps(a6, x, w);
    a7 = _mm512_dpbf16_ps(a7, x, w);
    a8 = _mm512_dpbf16_ps(a8, x, w);
    a9 = _mm512_dpbf16_ps(a9, x, w);
    a10 = _mm512_dpbf16_ps(a10, x, w);
    a11 = _mm512_dpbf16_ps(a11, x, w);
    asm volatile("" : "+v"(a0), "+v"(a1), "+v"(a2), "+v"(a3), "+v"(a4), "+v"(a5));
    asm volatile("" : "+v"(a6), "+v"(a7), "+v"(a8), "+v"(a9), "+v"(a10), "+v"(a11));
  }
  const __m512 s =
      _mm512_add_ps(_mm512_add_ps(_mm512_add_ps(_mm512_add_ps(a0, a1), _mm512_add_ps(a2, a3)),
                                  _mm512_add_ps(_mm512_add_ps(a4, a5), _mm512_add_ps(a6, a7))),
                    _mm512_add_ps(_mm512_add_ps(a8, a9), _mm512_add_ps(a10, a11)));
  return _mm512_reduce_add_ps(s);
}

}  // namespace dlas::peak_detail

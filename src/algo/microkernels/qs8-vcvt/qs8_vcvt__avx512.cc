// avx512 8-bit (de)quantization, 16 lanes: the avx2 kernel's arithmetic (vdivps, vrndscaleps
// to nearest even, clamp in float, NaN lanes to the zero point), narrowed with vpmovdb
// (exact: the values are already in range); tails run under a lane mask.
#include <immintrin.h>

#include "algo/microkernels/qs8-vcvt/qs8_vcvt.h"

namespace dlas::ukernel {

void qs8_vcvt__avx512_quantize(size_t n, const float* x, const QS8CvtParams& p, uint8_t* y) {
  const __m512 scale = _mm512_set1_ps(p.scale), zp = _mm512_set1_ps(float(p.zero_point));
  const __m512 lo = _mm512_set1_ps(p.is_signed ? -128.f : 0.f);
  const __m512 hi = _mm512_set1_ps(p.is_signed ? 127.f : 255.f);
  for (size_t i = 0; i < n; i += 16) {
    const __mmask16 m = n - i >= 16 ? __mmask16(0xffff) : __mmask16((1u << (n - i)) - 1);
    __m512 v = _mm512_div_ps(_mm512_maskz_loadu_ps(m, x + i), scale);
    v = _mm512_add_ps(_mm512_roundscale_ps(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC), zp);
    const __mmask16 nan = _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q);
    v = _mm512_mask_blend_ps(nan, _mm512_min_ps(_mm512_max_ps(v, lo), hi), zp);
    _mm_mask_storeu_epi8(y + i, m, _mm512_cvtepi32_epi8(_mm512_cvtps_epi32(v)));
  }
}

void qs8_vcvt__avx512_dequantize(size_t n, const uint8_t* x, const QS8CvtParams& p, float* y) {
  const __m512 scale = _mm512_set1_ps(p.scale);
  const __m512i zp = _mm512_set1_epi32(p.zero_point);
  for (size_t i = 0; i < n; i += 16) {
    const __mmask16 m = n - i >= 16 ? __mmask16(0xffff) : __mmask16((1u << (n - i)) - 1);
    const __m128i b = _mm_maskz_loadu_epi8(m, x + i);
    const __m512i q = p.is_signed ? _mm512_cvtepi8_epi32(b) : _mm512_cvtepu8_epi32(b);
    _mm512_mask_storeu_ps(y + i, m, _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_sub_epi32(q, zp)), scale));
  }
}

}  // namespace dlas::ukernel

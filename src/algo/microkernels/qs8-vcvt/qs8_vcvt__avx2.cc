// avx2 8-bit (de)quantization, 8 lanes: vdivps, vroundps to nearest even, clamp in float,
// NaN lanes blended to the zero point, then two saturating packs (exact: the values are
// already in range). The tail goes through a padded block so it runs the same instructions.
#include <immintrin.h>

#include "algo/microkernels/qs8-vcvt/qs8_vcvt.h"

namespace dlas::ukernel {
namespace {

inline __m128i quantize8(__m256 x, __m256 scale, __m256 zp, __m256 lo, __m256 hi, bool is_signed) {
  __m256 v = _mm256_round_ps(_mm256_div_ps(x, scale), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  v = _mm256_add_ps(v, zp);
  const __m256 nan = _mm256_cmp_ps(v, v, _CMP_UNORD_Q);
  v = _mm256_blendv_ps(_mm256_min_ps(_mm256_max_ps(v, lo), hi), zp, nan);
  const __m256i q = _mm256_cvtps_epi32(v);
  const __m128i w = _mm_packs_epi32(_mm256_castsi256_si128(q), _mm256_extracti128_si256(q, 1));
  return is_signed ? _mm_packs_epi16(w, w) : _mm_packus_epi16(w, w);
}

inline __m256 dequantize8(__m128i b, __m256i zp, __m256 scale, bool is_signed) {
  const __m256i q = is_signed ? _mm256_cvtepi8_epi32(b) : _mm256_cvtepu8_epi32(b);
  return _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_sub_epi32(q, zp)), scale);
}

}  // namespace

void qs8_vcvt__avx2_quantize(size_t n, const float* x, const QS8CvtParams& p, uint8_t* y) {
  const __m256 scale = _mm256_set1_ps(p.scale), zp = _mm256_set1_ps(float(p.zero_point));
  const __m256 lo = _mm256_set1_ps(p.is_signed ? -128.f : 0.f);
  const __m256 hi = _mm256_set1_ps(p.is_signed ? 127.f : 255.f);
  size_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm_storel_epi64(reinterpret_cast<__m128i*>(y + i),
                     quantize8(_mm256_loadu_ps(x + i), scale, zp, lo, hi, p.is_signed));
  if (i < n) {
    float f[8] = {};
    uint8_t b[16];
    __builtin_memcpy(f, x + i, (n - i) * 4);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(b),
                     quantize8(_mm256_loadu_ps(f), scale, zp, lo, hi, p.is_signed));
    __builtin_memcpy(y + i, b, n - i);
  }
}

void qs8_vcvt__avx2_dequantize(size_t n, const uint8_t* x, const QS8CvtParams& p, float* y) {
  const __m256 scale = _mm256_set1_ps(p.scale);
  const __m256i zp = _mm256_set1_epi32(p.zero_point);
  size_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps(y + i, dequantize8(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(x + i)),
                                        zp, scale, p.is_signed));
  if (i < n) {
    uint8_t b[16] = {};
    float f[8];
    __builtin_memcpy(b, x + i, n - i);
    _mm256_storeu_ps(f, dequantize8(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b)), zp,
                                    scale, p.is_signed));
    __builtin_memcpy(y + i, f, (n - i) * 4);
  }
}

}  // namespace dlas::ukernel

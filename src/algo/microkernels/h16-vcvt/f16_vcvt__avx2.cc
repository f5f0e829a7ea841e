// avx2 f16 rows: F16C vcvtph2ps / vcvtps2ph (round to nearest even), 8 lanes; the tail
// goes through a zero-padded 8-lane block so it uses the same instruction.
#include <immintrin.h>

#include "algo/microkernels/h16-vcvt/h16_vcvt.h"

namespace dlas::ukernel {

void f16_vcvt__avx2_widen(size_t n, const uint16_t* x, float* y) {
  size_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps(y + i,
                     _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(x + i))));
  if (i < n) {
    uint16_t h[8] = {};
    float f[8];
    __builtin_memcpy(h, x + i, (n - i) * 2);
    _mm256_storeu_ps(f, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(h))));
    __builtin_memcpy(y + i, f, (n - i) * 4);
  }
}

void f16_vcvt__avx2_narrow(size_t n, const float* x, uint16_t* y) {
  size_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm_storeu_si128(reinterpret_cast<__m128i*>(y + i),
                     _mm256_cvtps_ph(_mm256_loadu_ps(x + i), _MM_FROUND_TO_NEAREST_INT));
  if (i < n) {
    float f[8] = {};
    uint16_t h[8];
    __builtin_memcpy(f, x + i, (n - i) * 4);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(h),
                     _mm256_cvtps_ph(_mm256_loadu_ps(f), _MM_FROUND_TO_NEAREST_INT));
    __builtin_memcpy(y + i, h, (n - i) * 2);
  }
}

}  // namespace dlas::ukernel

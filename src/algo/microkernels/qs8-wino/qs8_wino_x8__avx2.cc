// AVX2 int8 Winograd F(2x2, 3x3) transforms on 8-channel blocks (qs8_wino.h): a pixel's block
// is 8 bytes, widened to 8 x int16 (one xmm) for the input transform; the output transform
// runs on 8 x int32 (one ymm) per point and ends in the qs8-nchwc AVX2 requantizing store.
#include <immintrin.h>

#include "algo/microkernels/qs8-nchwc/qs8_requant8_avx2.h"
#include "algo/microkernels/qs8-wino/qs8_wino.h"

namespace dlas::ukernel {

// B^T = [1 0 -1 0; 0 1 1 0; 0 -1 1 0; 0 1 0 -1], on the rows of d, then on its columns.
void qs8_wino_x8__avx2_input(const uint8_t* x, size_t x_rs, size_t tiles, int16_t* v, size_t v_ps) {
  for (size_t t = 0; t < tiles; ++t, x += 16, v += 8) {
    __m128i c[4][4];  // B^T d: c[i][s]
    __m128i d[4];
    for (int s = 0; s < 4; ++s) {
      for (int r = 0; r < 4; ++r)
        d[r] = _mm_cvtepu8_epi16(
            _mm_loadl_epi64(reinterpret_cast<const __m128i*>(x + r * x_rs + s * 8)));
      c[0][s] = _mm_sub_epi16(d[0], d[2]);
      c[1][s] = _mm_add_epi16(d[1], d[2]);
      c[2][s] = _mm_sub_epi16(d[2], d[1]);
      c[3][s] = _mm_sub_epi16(d[1], d[3]);
    }
    for (int i = 0; i < 4; ++i) {
      const __m128i e[4] = {_mm_sub_epi16(c[i][0], c[i][2]), _mm_add_epi16(c[i][1], c[i][2]),
                            _mm_sub_epi16(c[i][2], c[i][1]), _mm_sub_epi16(c[i][1], c[i][3])};
      for (int j = 0; j < 4; ++j)
        _mm_storeu_si128(reinterpret_cast<__m128i*>(v + (4 * i + j) * v_ps), e[j]);
    }
  }
}

// A^T = [1 1 1 0; 0 1 -1 -1] on the rows of M, then on its columns; >> 2; + init; the store.
void qs8_wino_x8__avx2_output(const QS8WinoOutArgs& a, const QS8GemmParams& p) {
  const Requant8Avx2 rq(p);
  const __m256i init = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a.init));
  const __m256 mult = _mm256_loadu_ps(a.mult);
  const int32_t* m = a.m;
  for (size_t t = 0; t < a.tiles; ++t, m += 8) {
    __m256i u[2][4];  // A^T M
    for (int s = 0; s < 4; ++s) {
      __m256i q[4];
      for (int r = 0; r < 4; ++r)
        q[r] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(m + (4 * r + s) * a.m_ps));
      u[0][s] = _mm256_add_epi32(_mm256_add_epi32(q[0], q[1]), q[2]);
      u[1][s] = _mm256_sub_epi32(_mm256_sub_epi32(q[1], q[2]), q[3]);
    }
    const size_t cols = t + 1 == a.tiles ? a.last_cols : 2;
    for (size_t i = 0; i < a.rows; ++i) {
      const __m256i y2[2] = {_mm256_add_epi32(_mm256_add_epi32(u[i][0], u[i][1]), u[i][2]),
                             _mm256_sub_epi32(_mm256_sub_epi32(u[i][1], u[i][2]), u[i][3])};
      for (size_t j = 0; j < cols; ++j) {
        const size_t at = i * a.y_rs + (2 * t + j) * 8;
        const __m256i sum = _mm256_add_epi32(_mm256_srai_epi32(y2[j], 2), init);
        rq.store(sum, mult, a.r ? a.r + at : nullptr, a.y + at);
      }
    }
  }
}

}  // namespace dlas::ukernel

// Byte -> float table lookups on AVX-512, 16 bytes widened to indices: one vgatherdps from
// the 1 KiB table (L1), or the table in 16 zmm registers -- 8 vpermi2ps, each a 32-entry
// slice by the index's low 5 bits, then a blend tree on bits 5, 6 and 7.
#include <immintrin.h>

#include "algo/microkernels/u8-lut/u8_lut.h"

namespace dlas::ukernel {

void u8_lut__avx512_floats(size_t n, const uint8_t* x, const float* table, float* y) {
  size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m512i idx =
        _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(x + i)));
    _mm512_storeu_ps(y + i, _mm512_i32gather_ps(idx, table, 4));
  }
  if (i < n) {
    const __mmask16 m = static_cast<__mmask16>((1u << (n - i)) - 1);
    const __m512i idx = _mm512_cvtepu8_epi32(_mm_maskz_loadu_epi8(m, x + i));
    _mm512_mask_storeu_ps(y + i, m,
                          _mm512_mask_i32gather_ps(_mm512_setzero_ps(), m, idx, table, 4));
  }
}

void u8_lut__avx512_permute_floats(size_t n, const uint8_t* x, const float* table, float* y) {
  __m512 t[16];
  for (int k = 0; k < 16; ++k) t[k] = _mm512_loadu_ps(table + 16 * k);
  const __m512i b5 = _mm512_set1_epi32(32), b6 = _mm512_set1_epi32(64);
  const __m512i b7 = _mm512_set1_epi32(128);
  auto lookup = [&](__m512i idx) {
    __m512 r[8];
    for (int k = 0; k < 8; ++k) r[k] = _mm512_permutex2var_ps(t[2 * k], idx, t[2 * k + 1]);
    const __mmask16 m5 = _mm512_test_epi32_mask(idx, b5);
    const __mmask16 m6 = _mm512_test_epi32_mask(idx, b6);
    const __mmask16 m7 = _mm512_test_epi32_mask(idx, b7);
    for (int k = 0; k < 4; ++k) r[k] = _mm512_mask_blend_ps(m5, r[2 * k], r[2 * k + 1]);
    for (int k = 0; k < 2; ++k) r[k] = _mm512_mask_blend_ps(m6, r[2 * k], r[2 * k + 1]);
    return _mm512_mask_blend_ps(m7, r[0], r[1]);
  };
  size_t i = 0;
  for (; i + 16 <= n; i += 16)
    _mm512_storeu_ps(
        y + i,
        lookup(_mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(x + i)))));
  if (i < n) {
    const __mmask16 m = static_cast<__mmask16>((1u << (n - i)) - 1);
    _mm512_mask_storeu_ps(y + i, m, lookup(_mm512_cvtepu8_epi32(_mm_maskz_loadu_epi8(m, x + i))));
  }
}

}  // namespace dlas::ukernel

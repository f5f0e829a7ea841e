// avx512 16-bit channel rows <-> f32 channel blocks: 16 pixels at a time, the 16 channel
// rows widened into zmm (vcvtph2ps for f16, a 16-bit shift for bf16), a 16 x 16 f32
// transpose in registers (unpack ps, unpack pd, two 128-bit lane shuffles), 16 pixel
// vectors stored; narrowing is the same transpose back and vcvtps2ph / the bf16 rounding
// add per channel row. Masked pixel tails and channel rows.
#include <immintrin.h>

#include "algo/microkernels/h16-vblock/h16_vblock.h"

// GCC 12 reports the intrinsics' own "undefined" source operand (__Y = __Y in
// avx512fintrin.h) as maybe-uninitialized once inlined here; it is never read.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

namespace dlas::ukernel {
namespace {

// r[i][j] -> r[j][i] for a 16 x 16 f32 block.
inline void transpose16(__m512 r[16]) {
  __m512 t[16], u[16];
  for (int i = 0; i < 8; ++i) {
    t[2 * i] = _mm512_unpacklo_ps(r[2 * i], r[2 * i + 1]);
    t[2 * i + 1] = _mm512_unpackhi_ps(r[2 * i], r[2 * i + 1]);
  }
  // u[4g + m]: lane L holds column 4L + m of rows 4g .. 4g + 3.
  for (int g = 0; g < 4; ++g) {
    const __m512d a = _mm512_castps_pd(t[4 * g]), b = _mm512_castps_pd(t[4 * g + 1]);
    const __m512d c = _mm512_castps_pd(t[4 * g + 2]), d = _mm512_castps_pd(t[4 * g + 3]);
    u[4 * g + 0] = _mm512_castpd_ps(_mm512_unpacklo_pd(a, c));
    u[4 * g + 1] = _mm512_castpd_ps(_mm512_unpackhi_pd(a, c));
    u[4 * g + 2] = _mm512_castpd_ps(_mm512_unpacklo_pd(b, d));
    u[4 * g + 3] = _mm512_castpd_ps(_mm512_unpackhi_pd(b, d));
  }
  for (int m = 0; m < 4; ++m) {
    const __m512 a = _mm512_shuffle_f32x4(u[m], u[4 + m], 0x44);
    const __m512 b = _mm512_shuffle_f32x4(u[m], u[4 + m], 0xee);
    const __m512 c = _mm512_shuffle_f32x4(u[8 + m], u[12 + m], 0x44);
    const __m512 d = _mm512_shuffle_f32x4(u[8 + m], u[12 + m], 0xee);
    r[m] = _mm512_shuffle_f32x4(a, c, 0x88);
    r[4 + m] = _mm512_shuffle_f32x4(a, c, 0xdd);
    r[8 + m] = _mm512_shuffle_f32x4(b, d, 0x88);
    r[12 + m] = _mm512_shuffle_f32x4(b, d, 0xdd);
  }
}

template <DType T>
inline __m512 widen16(__m256i h) {
  if constexpr (T == DType::kF16) return _mm512_cvtph_ps(h);
  return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
}

template <DType T>
inline __m256i narrow16(__m512 f) {
  if constexpr (T == DType::kF16) return _mm512_cvtps_ph(f, _MM_FROUND_TO_NEAREST_INT);
  const __m512i u = _mm512_castps_si512(f);
  const __m512i odd = _mm512_and_si512(_mm512_srli_epi32(u, 16), _mm512_set1_epi32(1));
  __m512i r =
      _mm512_srli_epi32(_mm512_add_epi32(_mm512_add_epi32(u, _mm512_set1_epi32(0x7fff)), odd), 16);
  const __mmask16 nan = _mm512_cmp_ps_mask(f, f, _CMP_UNORD_Q);
  r = _mm512_mask_or_epi32(r, nan, _mm512_srli_epi32(u, 16), _mm512_set1_epi32(0x40));
  return _mm512_cvtepi32_epi16(r);
}

template <DType T>
void widen(size_t pixels, const uint16_t* x, size_t plane, size_t channels, float* y) {
  __m512 r[16];
  for (size_t p = 0; p < pixels; p += 16) {
    const size_t np = pixels - p < 16 ? pixels - p : 16;
    const __mmask16 m = static_cast<__mmask16>((1u << np) - 1);
    for (size_t c = 0; c < 16; ++c)
      r[c] = c < channels ? widen16<T>(_mm256_maskz_loadu_epi16(m, x + c * plane + p))
                          : _mm512_setzero_ps();
    transpose16(r);
    for (size_t i = 0; i < np; ++i) _mm512_storeu_ps(y + (p + i) * 16, r[i]);
  }
}

template <DType T>
void narrow(size_t pixels, const float* y, size_t channels, uint16_t* x, size_t plane) {
  __m512 r[16];
  for (size_t p = 0; p < pixels; p += 16) {
    const size_t np = pixels - p < 16 ? pixels - p : 16;
    const __mmask16 m = static_cast<__mmask16>((1u << np) - 1);
    for (size_t i = 0; i < 16; ++i)
      r[i] = i < np ? _mm512_loadu_ps(y + (p + i) * 16) : _mm512_setzero_ps();
    transpose16(r);
    for (size_t c = 0; c < channels; ++c)
      _mm256_mask_storeu_epi16(x + c * plane + p, m, narrow16<T>(r[c]));
  }
}

}  // namespace

DLAS_H16_VBLOCK_ENTRY(f16_vblock__avx512, DType::kF16)
DLAS_H16_VBLOCK_ENTRY(bf16_vblock__avx512, DType::kBF16)

}  // namespace dlas::ukernel

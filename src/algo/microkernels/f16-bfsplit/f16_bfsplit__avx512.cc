// avx512 fp16 -> bf16 hi/lo splits: vcvtph2ps, the bf16 rounding as an integer add
// (round to nearest even on the dropped half), lo = x - hi in f32 (exact); 16 values per
// step, masked tail. An infinity or NaN goes whole into hi (a NaN stays a NaN), lo = 0.
#include <immintrin.h>

// GCC 12 reports the intrinsics' own "undefined" source operand (__Y = __Y in
// avx512fintrin.h) as maybe-uninitialized once inlined here; it is never read.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

#include "algo/microkernels/f16-bfsplit/f16_bfsplit.h"

namespace dlas::ukernel {
namespace {

// x's bf16 rounding in the high half of each lane (low half zero).
inline __m512i hi_bits(__m512 x) {
  const __m512i b = _mm512_castps_si512(x);
  const __m512i odd = _mm512_and_si512(_mm512_srli_epi32(b, 16), _mm512_set1_epi32(1));
  const __m512i r = _mm512_add_epi32(_mm512_add_epi32(b, _mm512_set1_epi32(0x7fff)), odd);
  const __m512i hi = _mm512_and_si512(r, _mm512_set1_epi32(static_cast<int>(0xffff0000u)));
  // NaN: keep the value's own high half (quiet), not a rounded-over infinity.
  const __mmask16 nan = _mm512_cmp_ps_mask(x, x, _CMP_UNORD_Q);
  return _mm512_mask_or_epi32(hi, nan,
                              _mm512_and_si512(b, _mm512_set1_epi32(static_cast<int>(0xffff0000u))),
                              _mm512_set1_epi32(0x00400000));
}

inline __m512 widen(const uint16_t* x, __mmask16 m) {
  return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, x));
}

inline __m512i hilo(__m512 x) {
  const __m512i hi = hi_bits(x);
  const __m512 lo = _mm512_sub_ps(x, _mm512_castsi512_ps(hi));
  const __mmask16 finite = _mm512_cmp_ps_mask(_mm512_sub_ps(x, x), _mm512_setzero_ps(), _CMP_EQ_OQ);
  const __m512i lob = _mm512_maskz_and_epi32(finite, _mm512_castps_si512(lo),
                                             _mm512_set1_epi32(static_cast<int>(0xffff0000u)));
  return _mm512_or_si512(_mm512_srli_epi32(hi, 16), lob);
}

}  // namespace

void f16_bfsplit__avx512_hilo(size_t n, const uint16_t* x, uint32_t* y) {
  size_t i = 0;
  for (; i + 16 <= n; i += 16)
    _mm512_storeu_si512(
        y + i, hilo(_mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(x + i)))));
  if (i < n) {
    const __mmask16 m = static_cast<__mmask16>((1u << (n - i)) - 1);
    _mm512_mask_storeu_epi32(y + i, m, hilo(widen(x + i, m)));
  }
}

void f16_bfsplit__avx512_hipair(size_t n, const uint16_t* a, const uint16_t* b, uint32_t* y) {
  size_t i = 0;
  const __mmask16 all = 0xffff;
  for (; i < n; i += 16) {
    const __mmask16 m = n - i >= 16 ? all : static_cast<__mmask16>((1u << (n - i)) - 1);
    const __m512i ha = _mm512_srli_epi32(hi_bits(widen(a + i, m)), 16);
    const __m512i hb = hi_bits(widen(b + i, m));
    _mm512_mask_storeu_epi32(y + i, m, _mm512_or_si512(ha, hb));
  }
}

}  // namespace dlas::ukernel

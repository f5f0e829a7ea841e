// Byte -> float table lookup on AVX-512: 16 bytes widened to indices, one vgatherdps from
// the 1 KiB table (L1).
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

}  // namespace dlas::ukernel

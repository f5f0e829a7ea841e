// Byte table lookup on AVX512-VBMI: 64 bytes per step, two vpermi2b (each a 128-byte half of
// the table, indexed by the low 7 bits) and a byte blend on the index's top bit (vpmovb2m).
#include <immintrin.h>

#include "algo/microkernels/u8-lut/u8_lut.h"

namespace dlas::ukernel {

void u8_lut__avx512vbmi_bytes(size_t n, const uint8_t* x, const uint8_t* table, uint8_t* y) {
  const __m512i t0 = _mm512_loadu_si512(table), t1 = _mm512_loadu_si512(table + 64);
  const __m512i t2 = _mm512_loadu_si512(table + 128), t3 = _mm512_loadu_si512(table + 192);
  auto lookup = [&](__m512i v) {
    const __m512i lo = _mm512_permutex2var_epi8(t0, v, t1);  // index bits 0-6 (bit 6: t1)
    const __m512i hi = _mm512_permutex2var_epi8(t2, v, t3);
    return _mm512_mask_blend_epi8(_mm512_movepi8_mask(v), lo, hi);
  };
  size_t i = 0;
  for (; i + 64 <= n; i += 64) _mm512_storeu_si512(y + i, lookup(_mm512_loadu_si512(x + i)));
  if (i < n) {
    const __mmask64 m = _cvtu64_mask64((~uint64_t{0}) >> (64 - (n - i)));
    _mm512_mask_storeu_epi8(y + i, m, lookup(_mm512_maskz_loadu_epi8(m, x + i)));
  }
}

}  // namespace dlas::ukernel

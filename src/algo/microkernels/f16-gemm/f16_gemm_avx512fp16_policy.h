// The AVX512-FP16 half-arithmetic policy of f16_gemm_template.h (included only by
// *__avx512fp16.cc TUs; anonymous namespace).
#pragma once

#include <immintrin.h>

#include <cstdint>

namespace {

struct F16Avx512Fp16 {
  static constexpr int kLanes = 32;
  typedef __m512h HV;
  static HV zero() { return _mm512_setzero_ph(); }
  static HV load(const uint16_t* p) { return _mm512_loadu_ph(p); }
  static HV splat(uint16_t a) {
    return _mm512_castsi512_ph(_mm512_set1_epi16(static_cast<short>(a)));
  }
  static HV fma(HV a, HV b, HV c) { return _mm512_fmadd_ph(a, b, c); }
  static void widen(HV v, float* out) {
    const __m512i x = _mm512_castph_si512(v);
    _mm512_storeu_ps(out, _mm512_cvtph_ps(_mm512_extracti64x4_epi64(x, 0)));
    _mm512_storeu_ps(out + 16, _mm512_cvtph_ps(_mm512_extracti64x4_epi64(x, 1)));
  }
};

}  // namespace

// The int8 dot-product policies of the *__avx512vnni.cc TUs of qs8-gemm, qs8-spack and qs8-dwchan
// (included only by them: it uses that ISA's intrinsics; anonymous namespace).
#pragma once

#include <immintrin.h>

#include "algo/microkernels/qs8-gemm/qs8_gemm_avx512_policy.h"
#include "algo/microkernels/qs8-gemm/qs8_gemm_template.h"

namespace {

// u8 x s8 quads: vpdpbusd zmm, four products per int32 lane, no saturation.
struct QS8Avx512VnniQuads : QS8Avx512Bytes {
  static constexpr int kLanes = 16;
  typedef QVec<16>::i32 I;
  typedef QVec<16>::f32 F;
  static I dot(I acc, I b, I a) {
    return (I)_mm512_dpbusd_epi32((__m512i)acc, (__m512i)b, (__m512i)a);
  }
  static F fma(F a, F b, F c) { return (F)_mm512_fmadd_ps((__m512)a, (__m512)b, (__m512)c); }
};

// s16 pairs: vpdpwssd zmm, vpmaddwd and the add in one instruction (no saturation).
struct QS8Avx512VnniPairs : QS8Avx512Bytes {
  static constexpr int kLanes = 16;
  typedef QVec<16>::i32 I;
  typedef QVec<16>::f32 F;
  static I dot(I acc, I b, I a) {
    return (I)_mm512_dpwssd_epi32((__m512i)acc, (__m512i)b, (__m512i)a);
  }
  static F fma(F a, F b, F c) { return (F)_mm512_fmadd_ps((__m512)a, (__m512)b, (__m512)c); }
};

}  // namespace

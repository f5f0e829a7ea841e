// The int8 dot-product policy of the *__avx512.cc TUs of qs8-gemm, qs8-spack and qs8-dwconv
// (included only by them: it uses that ISA's intrinsics; anonymous namespace).
#pragma once

#include <immintrin.h>

#include "algo/microkernels/qs8-gemm/qs8_gemm_template.h"

namespace {

// s16 pairs through vpmaddwd (exact, see qs8_gemm.h); 16 lanes per zmm.
struct QS8Avx512Pairs {
  static constexpr int kLanes = 16;
  typedef QVec<16>::i32 I;
  typedef QVec<16>::f32 F;
  static I dot(I acc, I b, I a) { return acc + (I)_mm512_madd_epi16((__m512i)b, (__m512i)a); }
  static F fma(F a, F b, F c) { return (F)_mm512_fmadd_ps((__m512)a, (__m512)b, (__m512)c); }
};

}  // namespace

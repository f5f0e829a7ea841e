// The int8 dot-product policy of the *__avx2.cc TUs of qs8-gemm, qs8-spack and qs8-dwconv
// (included only by them: it uses that ISA's intrinsics; anonymous namespace).
#pragma once

#include <immintrin.h>

#include "algo/microkernels/qs8-gemm/qs8_gemm_template.h"

namespace {

// s16 pairs: vpmaddwd sums two products of at most 255 * 128 into an int32 lane (exact;
// pmaddubsw would saturate). 8 lanes = 8 pixels (or output channels) per ymm.
struct QS8Avx2Pairs {
  static constexpr int kLanes = 8;
  typedef QVec<8>::i32 I;
  typedef QVec<8>::f32 F;
  static I dot(I acc, I b, I a) { return acc + (I)_mm256_madd_epi16((__m256i)b, (__m256i)a); }
  static F fma(F a, F b, F c) { return (F)_mm256_fmadd_ps((__m256)a, (__m256)b, (__m256)c); }
};

}  // namespace

// The int8 dot-product policy of the *__avx2vnni.cc TUs of qs8-gemm and qs8-spack (included
// only by them: it uses that ISA's intrinsics; anonymous namespace).
#pragma once

#include <immintrin.h>

#include "algo/microkernels/qs8-gemm/qs8_gemm_avx2_policy.h"
#include "algo/microkernels/qs8-gemm/qs8_gemm_template.h"

namespace {

// u8 x s8 quads: vpdpbusd (VEX, AVX-VNNI) adds four products per int32 lane, no saturation.
struct QS8Avx2VnniQuads : QS8Avx2Bytes {
  static constexpr int kLanes = 8;
  typedef QVec<8>::i32 I;
  typedef QVec<8>::f32 F;
  static I dot(I acc, I b, I a) {
    return (I)_mm256_dpbusd_avx_epi32((__m256i)acc, (__m256i)b, (__m256i)a);
  }
  static F fma(F a, F b, F c) { return (F)_mm256_fmadd_ps((__m256)a, (__m256)b, (__m256)c); }
};

}  // namespace

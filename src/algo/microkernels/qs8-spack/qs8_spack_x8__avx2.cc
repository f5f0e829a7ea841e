// AVX2: 8 output channels per ymm, s16 pairs through vpmaddwd (exact, qs8_gemm.h).
#include <immintrin.h>

#include "algo/microkernels/qs8-spack/qs8_spack_kernels.h"
#include "algo/microkernels/qs8-spack/qs8_spack_vec.h"

namespace {
struct Policy {
  static constexpr int kLanes = 8;
  typedef QVec<8>::i32 I;
  typedef QVec<8>::f32 F;
  static I dot(I acc, I b, I a) { return acc + (I)_mm256_madd_epi16((__m256i)b, (__m256i)a); }
  static F fma(F a, F b, F c) { return (F)_mm256_fmadd_ps((__m256)a, (__m256)b, (__m256)c); }
};
}  // namespace

namespace dlas::ukernel {

QS8SpackFn qs8_spack_x8__avx2(int vectors, int vh, int vw) {
  return qs8_spack_select<Policy>(vectors, vh, vw);
}

}  // namespace dlas::ukernel

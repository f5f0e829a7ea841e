// AVX2 default: 6x16 = 12 ymm accumulators + 2 B vectors + 1 broadcast (15 of 16 ymm).
#include <immintrin.h>

#include "algo/microkernels/qs8-gemm/qs8_gemm_kernels.h"
#include "algo/microkernels/qs8-gemm/qs8_gemm_vec.h"

namespace {
// s16 pairs: vpmaddwd sums two products of at most 255 * 128 into an int32 lane (exact;
// pmaddubsw would saturate). 8 lanes = 8 pixels per ymm.
struct Policy {
  static constexpr int kLanes = 8;
  typedef QVec<8>::i32 I;
  typedef QVec<8>::f32 F;
  static I dot(I acc, I b, I a) { return acc + (I)_mm256_madd_epi16((__m256i)b, (__m256i)a); }
  static F fma(F a, F b, F c) { return (F)_mm256_fmadd_ps((__m256)a, (__m256)b, (__m256)c); }
};
}  // namespace

namespace dlas::ukernel {

void qs8_gemm_6x16__avx2(size_t m, size_t n, size_t kq, const void* a, const void* b, void* c,
                         size_t ldc, const QS8GemmParams& p) {
  qs8_gemm_vec<Policy, 6, 2>(m, n, kq, a, b, c, ldc, p);
}

}  // namespace dlas::ukernel

// AVX-VNNI candidate: 4x24 (12 accumulators + 3 B + 1 broadcast).
#include <immintrin.h>

#include "algo/microkernels/qs8-gemm/qs8_gemm_kernels.h"
#include "algo/microkernels/qs8-gemm/qs8_gemm_vec.h"

namespace {
// u8 x s8 quads: vpdpbusd (VEX, AVX-VNNI) adds four products per int32 lane, no saturation.
struct Policy {
  static constexpr int kLanes = 8;
  typedef QVec<8>::i32 I;
  typedef QVec<8>::f32 F;
  static I dot(I acc, I b, I a) {
    return (I)_mm256_dpbusd_avx_epi32((__m256i)acc, (__m256i)b, (__m256i)a);
  }
  static F fma(F a, F b, F c) { return (F)_mm256_fmadd_ps((__m256)a, (__m256)b, (__m256)c); }
};
}  // namespace

namespace dlas::ukernel {

void qs8_gemm_4x24__avx2vnni(size_t m, size_t n, size_t kq, const void* a, const void* b, void* c,
                             size_t ldc, const QS8GemmParams& p) {
  qs8_gemm_vec<Policy, 4, 3>(m, n, kq, a, b, c, ldc, p);
}

}  // namespace dlas::ukernel

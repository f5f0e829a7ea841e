// AVX-512 candidate: 6x64 = 24 zmm accumulators + 4 B vectors + 1 broadcast; wide
// in N for pixel-rich, channel-poor layers.
#include "algo/microkernels/f32-gemm/f32_gemm.h"
#include "algo/microkernels/f32-gemm/f32_gemm_template.h"

namespace dlas::ukernel {

void f32_gemm_6x64__avx512(size_t m, size_t n, size_t k, const float* a, const float* b,
                           const int64_t* b_off, float* c, size_t ldc, const float* bias,
                           bool accumulate, float min, float max) {
  f32_gemm_vec<6, 4, 16>(m, n, k, a, b, b_off, c, ldc, bias, accumulate, min, max);
}

}  // namespace dlas::ukernel

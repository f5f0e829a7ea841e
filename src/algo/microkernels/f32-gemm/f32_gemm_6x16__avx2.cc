// AVX2 default: 6x16 = 12 ymm accumulators + 2 B vectors + 1 A broadcast of the 16
// ymm registers; per k step 12 FMAs against 8 loads, so the two FMA ports stay busy.
#include "algo/microkernels/f32-gemm/f32_gemm.h"
#include "algo/microkernels/f32-gemm/f32_gemm_template.h"

namespace dlas::ukernel {

void f32_gemm_6x16__avx2(size_t m, size_t n, size_t k, const float* a, const float* b,
                         const int64_t* b_off, float* c, size_t ldc, const float* bias,
                         bool accumulate, float min, float max) {
  f32_gemm_vec<6, 2, 8>(m, n, k, a, b, b_off, c, ldc, bias, accumulate, min, max);
}

}  // namespace dlas::ukernel

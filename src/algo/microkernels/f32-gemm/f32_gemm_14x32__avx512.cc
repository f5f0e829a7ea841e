// AVX-512 default: 14x32 = 28 zmm accumulators + 2 B vectors + 1 A broadcast of
// the 32 zmm registers; 28 FMAs per 16 loads.
#include "algo/microkernels/f32-gemm/f32_gemm.h"
#include "algo/microkernels/f32-gemm/f32_gemm_template.h"

namespace dlas::ukernel {

void f32_gemm_14x32__avx512(size_t m, size_t n, size_t k, const float* a, const float* b,
                            const int64_t* b_off, float* c, size_t ldc, const float* bias,
                            bool accumulate, float min, float max) {
  f32_gemm_vec<14, 2, 16>(m, n, k, a, b, b_off, c, ldc, bias, accumulate, min, max);
}

}  // namespace dlas::ukernel

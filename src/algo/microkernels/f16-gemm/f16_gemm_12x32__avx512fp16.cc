// AVX512-FP16 f16 GEMM, 12x32: 12 x 1 zmm half accumulators (32 halves each).
#include "algo/microkernels/f16-gemm/f16_gemm_avx512fp16_policy.h"
#include "algo/microkernels/f16-gemm/f16_gemm_template.h"
#include "algo/microkernels/h16-gemm/h16_gemm.h"

namespace dlas::ukernel {

void f16_gemm_12x32__avx512fp16(size_t m, size_t n, size_t k, const uint16_t* a, const uint16_t* b,
                                size_t flush, float* c, size_t ldc, bool accumulate) {
  f16_gemm_native<12, 1, F16Avx512Fp16>(m, n, k, a, b, flush, c, ldc, accumulate);
}

}  // namespace dlas::ukernel

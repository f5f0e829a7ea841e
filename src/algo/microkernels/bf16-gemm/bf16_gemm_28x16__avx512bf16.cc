// AVX512-BF16 bf16 GEMM, 28x16: 28 x 1 zmm f32 accumulators fed by vdpbf16ps, for planes of
// at most 16 output pixels (4x4, 2x2), where the 32-column tiles leave half their lanes idle.
// Each step loads one B pair vector and takes the 28 A pairs as broadcast memory operands.
#include "algo/microkernels/bf16-gemm/bf16_gemm_avx512bf16_policy.h"
#include "algo/microkernels/bf16-gemm/bf16_gemm_template.h"
#include "algo/microkernels/h16-gemm/h16_gemm.h"

namespace dlas::ukernel {

void bf16_gemm_28x16__avx512bf16(size_t m, size_t n, size_t k, const uint16_t* a, const uint16_t* b,
                                 size_t flush, float* c, size_t ldc, bool accumulate) {
  bf16_gemm_dot<28, 1, Bf16Avx512Bf16>(m, n, k, a, b, flush, c, ldc, accumulate);
}

}  // namespace dlas::ukernel

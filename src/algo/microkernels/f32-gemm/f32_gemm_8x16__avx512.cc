// AVX-512 candidate: 8x16 = 8 zmm accumulators, for layers with few output pixels.
#include "algo/microkernels/f32-gemm/f32_gemm.h"
#include "algo/microkernels/f32-gemm/f32_gemm_template.h"

namespace dlas::ukernel {

DLAS_F32_GEMM_KERNEL(f32_gemm_8x16__avx512, 8, 1, 16)

}  // namespace dlas::ukernel

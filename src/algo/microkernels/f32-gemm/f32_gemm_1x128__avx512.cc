// AVX-512 GEMV kernel: one row, 8 independent zmm accumulators; fully-connected
// layers at batch 1.
#include "algo/microkernels/f32-gemm/f32_gemm.h"
#include "algo/microkernels/f32-gemm/f32_gemm_template.h"

namespace dlas::ukernel {

DLAS_F32_GEMM_KERNEL(f32_gemm_1x128__avx512, 1, 8, 16)

}  // namespace dlas::ukernel

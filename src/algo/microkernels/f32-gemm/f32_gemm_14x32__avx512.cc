// AVX-512 default: 14x32 = 28 zmm accumulators + 2 B vectors + 1 A broadcast of
// the 32 zmm registers; 28 FMAs per 16 loads.
#include "algo/microkernels/f32-gemm/f32_gemm.h"
#include "algo/microkernels/f32-gemm/f32_gemm_template.h"

namespace dlas::ukernel {

DLAS_F32_GEMM_KERNEL(f32_gemm_14x32__avx512, 14, 2, 16)

}  // namespace dlas::ukernel

// AVX2 default: 6x16 = 12 ymm accumulators + 2 B vectors + 1 A broadcast of the 16
// ymm registers; per k step 12 FMAs against 8 loads, so the two FMA ports stay busy.
#include "algo/microkernels/f32-gemm/f32_gemm.h"
#include "algo/microkernels/f32-gemm/f32_gemm_template.h"

namespace dlas::ukernel {

DLAS_F32_GEMM_KERNEL(f32_gemm_6x16__avx2, 6, 2, 8)

}  // namespace dlas::ukernel

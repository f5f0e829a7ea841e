// AVX2 GEMV kernel: one row, 8 independent ymm accumulators (enough to cover FMA
// latency x 2 ports); fully-connected layers at batch 1 stream B (the weights) through it.
#include "algo/microkernels/f32-gemm/f32_gemm.h"
#include "algo/microkernels/f32-gemm/f32_gemm_template.h"

namespace dlas::ukernel {

DLAS_F32_GEMM_KERNEL(f32_gemm_1x64__avx2, 1, 8, 8)

}  // namespace dlas::ukernel

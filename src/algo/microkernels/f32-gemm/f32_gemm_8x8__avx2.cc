// AVX2 candidate: 8x8 = 8 accumulators; for layers with few output pixels (late,
// small-spatial layers) where a 16-wide tile would be mostly padding.
#include "algo/microkernels/f32-gemm/f32_gemm.h"
#include "algo/microkernels/f32-gemm/f32_gemm_template.h"

namespace dlas::ukernel {

DLAS_F32_GEMM_KERNEL(f32_gemm_8x8__avx2, 8, 1, 8)

}  // namespace dlas::ukernel

// AVX2 candidate: 4x24 = 12 ymm accumulators + 3 B vectors + 1 broadcast; wider in N
// (fewer A broadcasts per FMA), better for pixel-rich, channel-poor layers.
#include "algo/microkernels/f32-gemm/f32_gemm.h"
#include "algo/microkernels/f32-gemm/f32_gemm_template.h"

namespace dlas::ukernel {

DLAS_F32_GEMM_KERNEL(f32_gemm_4x24__avx2, 4, 3, 8)

}  // namespace dlas::ukernel

// AVX-512 candidate: 6x64 = 24 zmm accumulators + 4 B vectors + 1 broadcast; wide
// in N for pixel-rich, channel-poor layers.
#include "algo/microkernels/f32-gemm/f32_gemm.h"
#include "algo/microkernels/f32-gemm/f32_gemm_template.h"

namespace dlas::ukernel {

DLAS_F32_GEMM_KERNEL(f32_gemm_6x64__avx512, 6, 4, 16)

}  // namespace dlas::ukernel

// AVX2 candidate: 4x24 = 12 accumulators + 3 B vectors + 1 broadcast; wider pixel panels.
#include "algo/microkernels/qs8-gemm/qs8_gemm.h"
#include "algo/microkernels/qs8-gemm/qs8_gemm_avx2_policy.h"
#include "algo/microkernels/qs8-gemm/qs8_gemm_template.h"

namespace dlas::ukernel {

DLAS_QS8_GEMM_KERNEL(qs8_gemm_4x24__avx2, QS8Avx2Pairs, 4, 3)

}  // namespace dlas::ukernel

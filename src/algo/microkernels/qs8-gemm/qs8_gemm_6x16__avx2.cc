// AVX2 default: 6x16 = 12 ymm accumulators + 2 B vectors + 1 broadcast (15 of 16 ymm).
#include "algo/microkernels/qs8-gemm/qs8_gemm.h"
#include "algo/microkernels/qs8-gemm/qs8_gemm_avx2_policy.h"
#include "algo/microkernels/qs8-gemm/qs8_gemm_template.h"

namespace dlas::ukernel {

DLAS_QS8_GEMM_KERNEL(qs8_gemm_6x16__avx2, QS8Avx2Pairs, 6, 2)

}  // namespace dlas::ukernel

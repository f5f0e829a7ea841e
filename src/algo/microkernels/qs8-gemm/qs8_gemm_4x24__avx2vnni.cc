// AVX-VNNI candidate: 4x24 (12 accumulators + 3 B + 1 broadcast).
#include "algo/microkernels/qs8-gemm/qs8_gemm.h"
#include "algo/microkernels/qs8-gemm/qs8_gemm_avx2vnni_policy.h"
#include "algo/microkernels/qs8-gemm/qs8_gemm_template.h"

namespace dlas::ukernel {

DLAS_QS8_GEMM_KERNEL(qs8_gemm_4x24__avx2vnni, QS8Avx2VnniQuads, 4, 3)

}  // namespace dlas::ukernel

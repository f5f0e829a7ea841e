// AVX-VNNI default: 6x16 (12 ymm accumulators + 2 B + 1 broadcast), 4 MACs per lane per op.
#include "algo/microkernels/qs8-gemm/qs8_gemm.h"
#include "algo/microkernels/qs8-gemm/qs8_gemm_avx2vnni_policy.h"
#include "algo/microkernels/qs8-gemm/qs8_gemm_template.h"

namespace dlas::ukernel {

DLAS_QS8_GEMM_KERNEL(qs8_gemm_6x16__avx2vnni, QS8Avx2VnniQuads, 6, 2)

}  // namespace dlas::ukernel

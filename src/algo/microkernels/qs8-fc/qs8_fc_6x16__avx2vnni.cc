// AVX-VNNI default: 6x16 = 12 ymm accumulators + 2 W vectors + 1 broadcast (15 of 16 ymm).
#include "algo/microkernels/qs8-fc/qs8_fc.h"
#include "algo/microkernels/qs8-fc/qs8_fc_template.h"
#include "algo/microkernels/qs8-gemm/qs8_gemm_avx2vnni_policy.h"

namespace dlas::ukernel {

DLAS_QS8_FC_KERNEL(qs8_fc_6x16__avx2vnni, QS8Avx2VnniQuads, 6, 2)

}  // namespace dlas::ukernel

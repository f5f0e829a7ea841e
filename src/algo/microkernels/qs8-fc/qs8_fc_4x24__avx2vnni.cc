// AVX-VNNI candidate: 4x24 = 12 ymm accumulators + 3 W vectors + 1 broadcast.
#include "algo/microkernels/qs8-fc/qs8_fc.h"
#include "algo/microkernels/qs8-fc/qs8_fc_template.h"
#include "algo/microkernels/qs8-gemm/qs8_gemm_avx2vnni_policy.h"

namespace dlas::ukernel {

DLAS_QS8_FC_KERNEL(qs8_fc_4x24__avx2vnni, QS8Avx2VnniQuads, 4, 3)

}  // namespace dlas::ukernel

// AVX512-VNNI candidate: 8x48 = 24 zmm accumulators + 3 W vectors + 1 broadcast.
#include "algo/microkernels/qs8-fc/qs8_fc.h"
#include "algo/microkernels/qs8-fc/qs8_fc_template.h"
#include "algo/microkernels/qs8-gemm/qs8_gemm_avx512vnni_policy.h"

namespace dlas::ukernel {

DLAS_QS8_FC_KERNEL(qs8_fc_8x48__avx512vnni, QS8Avx512VnniQuads, 8, 3)

}  // namespace dlas::ukernel

// AVX512-VNNI candidate: 12x32 = 24 zmm accumulators + 2 W vectors + 1 broadcast.
#include "algo/microkernels/qs8-fc/qs8_fc.h"
#include "algo/microkernels/qs8-fc/qs8_fc_template.h"
#include "algo/microkernels/qs8-gemm/qs8_gemm_avx512vnni_policy.h"

namespace dlas::ukernel {

DLAS_QS8_FC_KERNEL(qs8_fc_12x32__avx512vnni, QS8Avx512VnniQuads, 12, 2)

}  // namespace dlas::ukernel

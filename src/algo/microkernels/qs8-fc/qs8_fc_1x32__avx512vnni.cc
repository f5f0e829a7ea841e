// AVX512-VNNI single-row tile of the default's panels: 1x32, for layers of a few rows.
#include "algo/microkernels/qs8-fc/qs8_fc.h"
#include "algo/microkernels/qs8-fc/qs8_fc_template.h"
#include "algo/microkernels/qs8-gemm/qs8_gemm_avx512vnni_policy.h"

namespace dlas::ukernel {

DLAS_QS8_FC_KERNEL(qs8_fc_1x32__avx512vnni, QS8Avx512VnniQuads, 1, 2)

}  // namespace dlas::ukernel

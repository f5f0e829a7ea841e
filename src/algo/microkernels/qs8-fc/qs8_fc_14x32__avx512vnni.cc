// AVX512-VNNI default: 14x32 = 28 zmm accumulators + 2 W vectors + 1 broadcast; the fastest
// of the candidates on the ConvNeXt-tiny Linear layers (1.0 TOPS on one Zen 5 core).
#include "algo/microkernels/qs8-fc/qs8_fc.h"
#include "algo/microkernels/qs8-fc/qs8_fc_template.h"
#include "algo/microkernels/qs8-gemm/qs8_gemm_avx512vnni_policy.h"

namespace dlas::ukernel {

DLAS_QS8_FC_KERNEL(qs8_fc_14x32__avx512vnni, QS8Avx512VnniQuads, 14, 2)

}  // namespace dlas::ukernel

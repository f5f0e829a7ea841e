// AVX-512 single-row tile of the default's panels: 1x32, for layers of a few rows.
#include "algo/microkernels/qs8-fc/qs8_fc.h"
#include "algo/microkernels/qs8-fc/qs8_fc_template.h"
#include "algo/microkernels/qs8-gemm/qs8_gemm_avx512_policy.h"

namespace dlas::ukernel {

DLAS_QS8_FC_KERNEL(qs8_fc_1x32__avx512, QS8Avx512Pairs, 1, 2)

}  // namespace dlas::ukernel

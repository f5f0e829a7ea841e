// AVX-512 default: 8x32 = 16 zmm accumulators + 2 W vectors + 1 broadcast.
#include "algo/microkernels/qs8-fc/qs8_fc.h"
#include "algo/microkernels/qs8-fc/qs8_fc_template.h"
#include "algo/microkernels/qs8-gemm/qs8_gemm_avx512_policy.h"

namespace dlas::ukernel {

DLAS_QS8_FC_KERNEL(qs8_fc_8x32__avx512, QS8Avx512Pairs, 8, 2)

}  // namespace dlas::ukernel

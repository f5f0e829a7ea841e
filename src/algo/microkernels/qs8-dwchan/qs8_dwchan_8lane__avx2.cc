// AVX2 channels-as-lanes int8 depthwise: 8 channels per ymm, tiles of 8 pixels, one vpmaddwd
// + vpaddd per tap.
#include "algo/microkernels/qs8-dwchan/qs8_dwchan.h"
#include "algo/microkernels/qs8-dwchan/qs8_dwchan_template.h"
#include "algo/microkernels/qs8-gemm/qs8_gemm_avx2_policy.h"

namespace dlas::ukernel {

DLAS_QS8_DWCHAN_KERNEL(qs8_dwchan_8lane__avx2, QS8Avx2Pairs, 8)

}  // namespace dlas::ukernel

// AVX512-VNNI channels-as-lanes int8 depthwise: 16 channels per zmm, tiles of 16 pixels, one
// vpdpwssd per tap.
#include "algo/microkernels/qs8-dwchan/qs8_dwchan.h"
#include "algo/microkernels/qs8-dwchan/qs8_dwchan_template.h"
#include "algo/microkernels/qs8-gemm/qs8_gemm_avx512vnni_policy.h"

namespace dlas::ukernel {

DLAS_QS8_DWCHAN_KERNEL(qs8_dwchan_16lane__avx512vnni, QS8Avx512VnniPairs, 16)

}  // namespace dlas::ukernel

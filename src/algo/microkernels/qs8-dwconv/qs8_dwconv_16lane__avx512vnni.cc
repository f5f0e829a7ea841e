// AVX512-VNNI int8 depthwise: 16 output pixels per zmm, one vpdpwssd (multiply the int16
// pairs and accumulate, fused) per tap pair; blocks of 2 vectors (32 pixels, the pair-row
// granule).
#include "algo/microkernels/qs8-dwconv/qs8_dwconv.h"
#include "algo/microkernels/qs8-dwconv/qs8_dwconv_template.h"
#include "algo/microkernels/qs8-gemm/qs8_gemm_avx512vnni_policy.h"

namespace dlas::ukernel {

DLAS_QS8_DWCONV_KERNEL(qs8_dwconv_16lane__avx512vnni, QS8Avx512VnniPairs, 2)

}  // namespace dlas::ukernel

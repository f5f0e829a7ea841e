// AVX-512 int8 depthwise: 16 output pixels per zmm, one vpmaddwd per tap pair; blocks of 2
// vectors (32 pixels, the pair-row granule).
#include "algo/microkernels/qs8-dwconv/qs8_dwconv.h"
#include "algo/microkernels/qs8-dwconv/qs8_dwconv_template.h"
#include "algo/microkernels/qs8-gemm/qs8_gemm_avx512_policy.h"

namespace dlas::ukernel {

DLAS_QS8_DWCONV_KERNEL(qs8_dwconv_16lane__avx512, QS8Avx512Pairs, 2)

}  // namespace dlas::ukernel

// AVX2 int8 depthwise: 8 output pixels per ymm, one vpmaddwd per tap pair; blocks of 4
// vectors (32 pixels): 4 accumulators + 6 weight pairs of a 3x3 kernel + 1 load in 16 ymm.
#include "algo/microkernels/qs8-dwconv/qs8_dwconv.h"
#include "algo/microkernels/qs8-dwconv/qs8_dwconv_template.h"
#include "algo/microkernels/qs8-gemm/qs8_gemm_avx2_policy.h"

namespace dlas::ukernel {

DLAS_QS8_DWCONV_KERNEL(qs8_dwconv_8lane__avx2, QS8Avx2Pairs, 4)

}  // namespace dlas::ukernel

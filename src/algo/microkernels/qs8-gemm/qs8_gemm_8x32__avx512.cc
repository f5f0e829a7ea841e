// AVX-512 without VNNI: 8x32 = 16 zmm accumulators + 2 B + 1 broadcast (of 32 zmm).
#include "algo/microkernels/qs8-gemm/qs8_gemm.h"
#include "algo/microkernels/qs8-gemm/qs8_gemm_avx512_policy.h"
#include "algo/microkernels/qs8-gemm/qs8_gemm_template.h"

namespace dlas::ukernel {

DLAS_QS8_GEMM_KERNEL(qs8_gemm_8x32__avx512, QS8Avx512Pairs, 8, 2)

}  // namespace dlas::ukernel

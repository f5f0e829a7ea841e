// AVX512-VNNI candidate: 14x32 = 28 zmm accumulators + 2 B + 1 broadcast (31 of 32).
#include "algo/microkernels/qs8-gemm/qs8_gemm.h"
#include "algo/microkernels/qs8-gemm/qs8_gemm_avx512vnni_policy.h"
#include "algo/microkernels/qs8-gemm/qs8_gemm_template.h"

namespace dlas::ukernel {

DLAS_QS8_GEMM_KERNEL(qs8_gemm_14x32__avx512vnni, QS8Avx512VnniQuads, 14, 2)

}  // namespace dlas::ukernel

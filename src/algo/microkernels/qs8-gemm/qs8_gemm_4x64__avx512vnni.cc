// AVX512-VNNI candidate: 4x64 = 16 accumulators + 4 B + 1 broadcast (few output channels).
#include "algo/microkernels/qs8-gemm/qs8_gemm.h"
#include "algo/microkernels/qs8-gemm/qs8_gemm_avx512vnni_policy.h"
#include "algo/microkernels/qs8-gemm/qs8_gemm_template.h"

namespace dlas::ukernel {

DLAS_QS8_GEMM_KERNEL(qs8_gemm_4x64__avx512vnni, QS8Avx512VnniQuads, 4, 4)

}  // namespace dlas::ukernel

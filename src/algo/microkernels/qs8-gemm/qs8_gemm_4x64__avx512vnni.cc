// AVX512-VNNI candidate: 4x64 = 16 accumulators + 4 B + 1 broadcast (few output channels).
#include "algo/microkernels/qs8-gemm/qs8_gemm.h"
#include "algo/microkernels/qs8-gemm/qs8_gemm_avx512vnni_policy.h"
#include "algo/microkernels/qs8-gemm/qs8_gemm_template.h"

namespace dlas::ukernel {

void qs8_gemm_4x64__avx512vnni(size_t m, size_t n, size_t kq, const void* a, const void* b, void* c,
                               size_t ldc, const QS8GemmParams& p) {
  qs8_gemm_vec<QS8Avx512VnniQuads, 4, 4>(m, n, kq, a, b, c, ldc, p);
}

}  // namespace dlas::ukernel

// AVX-VNNI candidate: 4x24 (12 accumulators + 3 B + 1 broadcast).
#include "algo/microkernels/qs8-gemm/qs8_gemm.h"
#include "algo/microkernels/qs8-gemm/qs8_gemm_avx2vnni_policy.h"
#include "algo/microkernels/qs8-gemm/qs8_gemm_template.h"

namespace dlas::ukernel {

void qs8_gemm_4x24__avx2vnni(size_t m, size_t n, size_t kq, const void* a, const void* b, void* c,
                             size_t ldc, const QS8GemmParams& p) {
  qs8_gemm_vec<QS8Avx2VnniQuads, 4, 3>(m, n, kq, a, b, c, ldc, p);
}

}  // namespace dlas::ukernel

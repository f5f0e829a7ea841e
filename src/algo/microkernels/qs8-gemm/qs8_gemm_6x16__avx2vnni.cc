// AVX-VNNI default: 6x16 (12 ymm accumulators + 2 B + 1 broadcast), 4 MACs per lane per op.
#include "algo/microkernels/qs8-gemm/qs8_gemm.h"
#include "algo/microkernels/qs8-gemm/qs8_gemm_avx2vnni_policy.h"
#include "algo/microkernels/qs8-gemm/qs8_gemm_template.h"

namespace dlas::ukernel {

void qs8_gemm_6x16__avx2vnni(size_t m, size_t n, size_t kq, const void* a, const void* b, void* c,
                             size_t ldc, const QS8GemmParams& p) {
  qs8_gemm_vec<QS8Avx2VnniQuads, 6, 2>(m, n, kq, a, b, c, ldc, p);
}

}  // namespace dlas::ukernel

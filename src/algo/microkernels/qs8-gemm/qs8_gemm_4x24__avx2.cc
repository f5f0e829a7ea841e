// AVX2 candidate: 4x24 = 12 accumulators + 3 B vectors + 1 broadcast; wider pixel panels.
#include "algo/microkernels/qs8-gemm/qs8_gemm.h"
#include "algo/microkernels/qs8-gemm/qs8_gemm_avx2_policy.h"
#include "algo/microkernels/qs8-gemm/qs8_gemm_template.h"

namespace dlas::ukernel {

void qs8_gemm_4x24__avx2(size_t m, size_t n, size_t kq, const void* a, const void* b, void* c,
                         size_t ldc, const QS8GemmParams& p) {
  qs8_gemm_vec<QS8Avx2Pairs, 4, 3>(m, n, kq, a, b, c, ldc, p);
}

}  // namespace dlas::ukernel

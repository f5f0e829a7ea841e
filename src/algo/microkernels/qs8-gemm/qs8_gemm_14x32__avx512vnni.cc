// AVX512-VNNI candidate: 14x32 = 28 zmm accumulators + 2 B + 1 broadcast (31 of 32).
#include "algo/microkernels/qs8-gemm/qs8_gemm.h"
#include "algo/microkernels/qs8-gemm/qs8_gemm_avx512vnni_policy.h"
#include "algo/microkernels/qs8-gemm/qs8_gemm_template.h"

namespace dlas::ukernel {

void qs8_gemm_14x32__avx512vnni(size_t m, size_t n, size_t kq, const void* a, const void* b,
                                void* c, size_t ldc, const QS8GemmParams& p) {
  qs8_gemm_vec<QS8Avx512VnniQuads, 14, 2>(m, n, kq, a, b, c, ldc, p);
}

}  // namespace dlas::ukernel

// AVX-512 without VNNI: 8x32 = 16 zmm accumulators + 2 B + 1 broadcast (of 32 zmm).
#include "algo/microkernels/qs8-gemm/qs8_gemm.h"
#include "algo/microkernels/qs8-gemm/qs8_gemm_avx512_policy.h"
#include "algo/microkernels/qs8-gemm/qs8_gemm_template.h"

namespace dlas::ukernel {

void qs8_gemm_8x32__avx512(size_t m, size_t n, size_t kq, const void* a, const void* b, void* c,
                           size_t ldc, const QS8GemmParams& p) {
  qs8_gemm_vec<QS8Avx512Pairs, 8, 2>(m, n, kq, a, b, c, ldc, p);
}

}  // namespace dlas::ukernel

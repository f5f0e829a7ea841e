// AVX-512 without VNNI: 8x32 = 16 zmm accumulators + 2 B + 1 broadcast (of 32 zmm).
#include <immintrin.h>

#include "algo/microkernels/qs8-gemm/qs8_gemm_kernels.h"
#include "algo/microkernels/qs8-gemm/qs8_gemm_vec.h"

namespace {
// s16 pairs through vpmaddwd (exact, see qs8_gemm.h); 16 pixels per zmm.
struct Policy {
  static constexpr int kLanes = 16;
  typedef QVec<16>::i32 I;
  typedef QVec<16>::f32 F;
  static I dot(I acc, I b, I a) { return acc + (I)_mm512_madd_epi16((__m512i)b, (__m512i)a); }
  static F fma(F a, F b, F c) { return (F)_mm512_fmadd_ps((__m512)a, (__m512)b, (__m512)c); }
};
}  // namespace

namespace dlas::ukernel {

void qs8_gemm_8x32__avx512(size_t m, size_t n, size_t kq, const void* a, const void* b, void* c,
                           size_t ldc, const QS8GemmParams& p) {
  qs8_gemm_vec<Policy, 8, 2>(m, n, kq, a, b, c, ldc, p);
}

}  // namespace dlas::ukernel

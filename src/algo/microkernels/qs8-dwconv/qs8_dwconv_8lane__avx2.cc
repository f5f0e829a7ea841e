// AVX2 int8 depthwise: 8 output pixels per ymm (vpmovsxwd + vpmulld + vpaddd per tap).
#include <immintrin.h>

#include "algo/microkernels/qs8-dwconv/qs8_dwconv.h"
#include "algo/microkernels/qs8-dwconv/qs8_dwconv_template.h"

namespace {
struct Policy {
  static constexpr int kLanes = 8;
  typedef QVec<8>::f32 F;
  static F fma(F a, F b, F c) { return (F)_mm256_fmadd_ps((__m256)a, (__m256)b, (__m256)c); }
};
}  // namespace

namespace dlas::ukernel {

void qs8_dwconv_8lane__avx2(const QS8DwPlane& d, int32_t bias, float mult, const void* residual,
                            void* y, const QS8GemmParams& p) {
  qs8_dwconv_vec<Policy>(d, bias, mult, residual, y, p);
}

}  // namespace dlas::ukernel

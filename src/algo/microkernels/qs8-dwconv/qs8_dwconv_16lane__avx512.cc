// AVX-512 int8 depthwise: 16 output pixels per zmm (vpmovsxwd + vpmulld + vpaddd per tap).
#include <immintrin.h>

#include "algo/microkernels/qs8-dwconv/qs8_dwconv.h"
#include "algo/microkernels/qs8-dwconv/qs8_dwconv_template.h"

namespace {
struct Policy {
  static constexpr int kLanes = 16;
  typedef QVec<16>::f32 F;
  static F fma(F a, F b, F c) { return (F)_mm512_fmadd_ps((__m512)a, (__m512)b, (__m512)c); }
};
}  // namespace

namespace dlas::ukernel {

void qs8_dwconv_16lane__avx512(const QS8DwPlane& d, int32_t bias, float mult, const void* residual,
                               void* y, const QS8GemmParams& p) {
  qs8_dwconv_vec<Policy>(d, bias, mult, residual, y, p);
}

}  // namespace dlas::ukernel

// AVX-512 without VNNI: 16 output channels per zmm, s16 pairs through vpmaddwd.
#include <immintrin.h>

#include "algo/microkernels/qs8-spack/qs8_spack_kernels.h"
#include "algo/microkernels/qs8-spack/qs8_spack_vec.h"

namespace {
struct Policy {
  static constexpr int kLanes = 16;
  typedef QVec<16>::i32 I;
  typedef QVec<16>::f32 F;
  static I dot(I acc, I b, I a) { return acc + (I)_mm512_madd_epi16((__m512i)b, (__m512i)a); }
  static F fma(F a, F b, F c) { return (F)_mm512_fmadd_ps((__m512)a, (__m512)b, (__m512)c); }
};
}  // namespace

namespace dlas::ukernel {

QS8SpackFn qs8_spack_x16__avx512(int vectors, int vh, int vw) {
  return qs8_spack_select<Policy>(vectors, vh, vw);
}

}  // namespace dlas::ukernel

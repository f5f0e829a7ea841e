// AVX512-VNNI (and AMX machines): 16 output channels per zmm, u8 x s8 quads through vpdpbusd.
#include <immintrin.h>

#include "algo/microkernels/qs8-spack/qs8_spack_kernels.h"
#include "algo/microkernels/qs8-spack/qs8_spack_vec.h"

namespace {
struct Policy {
  static constexpr int kLanes = 16;
  typedef QVec<16>::i32 I;
  typedef QVec<16>::f32 F;
  static I dot(I acc, I b, I a) {
    return (I)_mm512_dpbusd_epi32((__m512i)acc, (__m512i)b, (__m512i)a);
  }
  static F fma(F a, F b, F c) { return (F)_mm512_fmadd_ps((__m512)a, (__m512)b, (__m512)c); }
};
}  // namespace

namespace dlas::ukernel {

QS8SpackFn qs8_spack_x16__avx512vnni(int vectors, int vh, int vw) {
  return qs8_spack_select<Policy>(vectors, vh, vw);
}

}  // namespace dlas::ukernel

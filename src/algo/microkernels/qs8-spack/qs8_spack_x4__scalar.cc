// Portable int8 spatial-pack kernels: 4 output channels per 16-byte generic vector, u8 x s8
// quads summed lane by lane (the baseline path; the vector paths are the fast ones).
#include "algo/microkernels/qs8-spack/qs8_spack.h"
#include "algo/microkernels/qs8-spack/qs8_spack_template.h"

namespace {
struct Policy {
  static constexpr int kLanes = 4;
  typedef QVec<4>::i32 I;
  typedef QVec<4>::f32 F;
  static I dot(I acc, I b, I a) {
    uint8_t bb[16];
    int8_t ab[16];
    __builtin_memcpy(bb, &b, 16);
    __builtin_memcpy(ab, &a, 16);
    for (int l = 0; l < 4; ++l) {
      int32_t s = 0;
      for (int e = 0; e < 4; ++e) s += static_cast<int32_t>(bb[4 * l + e]) * ab[4 * l + e];
      // Wraps like the vector instructions (the folded init may sit near the int32 ends).
      acc[l] = static_cast<int32_t>(static_cast<uint32_t>(acc[l]) + static_cast<uint32_t>(s));
    }
    return acc;
  }
  static F fma(F a, F b, F c) {
    F out;
    for (int l = 0; l < 4; ++l) out[l] = __builtin_fmaf(a[l], b[l], c[l]);
    return out;
  }
};
}  // namespace

namespace dlas::ukernel {

QS8SpackFn qs8_spack_x4__scalar(int vectors, int vh, int vw) {
  return qs8_spack_select<Policy>(vectors, vh, vw);
}

}  // namespace dlas::ukernel

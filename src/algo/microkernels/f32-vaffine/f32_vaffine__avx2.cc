// avx2 per-channel affine: the vector template with 8 lanes.
#include "algo/microkernels/f32-vaffine/f32_vaffine.h"
#include "algo/microkernels/f32-vaffine/f32_vaffine_template.h"

namespace dlas::ukernel {

void f32_vaffine__avx2(size_t pixels, size_t lanes, const float* x, const float* scale,
                       const float* shift, float* y, Activation act, float p0, float p1) {
  f32_vaffine_vec<8>(pixels, lanes, x, scale, shift, y, act, p0, p1);
}

}  // namespace dlas::ukernel

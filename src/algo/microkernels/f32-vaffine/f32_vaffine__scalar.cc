// Portable per-channel affine: the oracle for the vector versions (the activation is the
// scalar epilogue's).
#include "algo/microkernels/f32-vaffine/f32_vaffine.h"
#include "algo/microkernels/f32-vepilogue/f32_vepilogue.h"

namespace dlas::ukernel {

void f32_vaffine__scalar(size_t pixels, size_t lanes, const float* x, const float* scale,
                         const float* shift, float* y, Activation act, float p0, float p1) {
  for (size_t p = 0; p < pixels; ++p)
    for (size_t l = 0; l < lanes; ++l) y[p * lanes + l] = x[p * lanes + l] * scale[l] + shift[l];
  f32_vepilogue__scalar(pixels * lanes, y, 0.f, nullptr, act, p0, p1);
}

}  // namespace dlas::ukernel

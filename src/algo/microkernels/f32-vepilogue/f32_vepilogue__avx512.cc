// avx512 epilogue: the vector template with 16 lanes.
#include "algo/microkernels/f32-vepilogue/f32_vepilogue.h"
#include "algo/microkernels/f32-vepilogue/f32_vepilogue_template.h"

namespace dlas::ukernel {

void f32_vepilogue__avx512(size_t n, float* y, float bias, const float* residual, Activation act,
                           float p0, float p1) {
  f32_vepilogue_vec<16>(n, y, bias, residual, act, p0, p1);
}

}  // namespace dlas::ukernel

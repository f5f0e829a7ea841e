// avx512 softmax: the vector template with 16 lanes.
#include "algo/microkernels/f32-vsoftmax/f32_vsoftmax.h"
#include "algo/microkernels/f32-vsoftmax/f32_vsoftmax_template.h"

namespace dlas::ukernel {

void f32_vsoftmax__avx512(size_t rows, size_t c, const float* x, float* y) {
  f32_vsoftmax_vec<16>(rows, c, x, y);
}

}  // namespace dlas::ukernel

// avx2 layer normalization: the vector template with 8 lanes.
#include "algo/microkernels/f32-vlayernorm/f32_vlayernorm.h"
#include "algo/microkernels/f32-vlayernorm/f32_vlayernorm_template.h"

namespace dlas::ukernel {

void f32_vlayernorm__avx2(size_t rows, size_t c, const float* x, const float* gamma,
                          const float* beta, float eps, float* y) {
  f32_vlayernorm_vec<8>(rows, c, x, gamma, beta, eps, y);
}

}  // namespace dlas::ukernel

// Portable softmax: the oracle for the vector versions (the same passes, std::exp).
#include <cmath>

#include "algo/microkernels/f32-vsoftmax/f32_vsoftmax.h"

namespace dlas::ukernel {

void f32_vsoftmax__scalar(size_t rows, size_t c, const float* x, float* y) {
  for (size_t r = 0; r < rows; ++r) {
    const float* xr = x + r * c;
    float* yr = y + r * c;
    float mx = xr[0];
    for (size_t i = 1; i < c; ++i) mx = xr[i] > mx ? xr[i] : mx;
    float sum = 0.f;
    for (size_t i = 0; i < c; ++i) {
      yr[i] = std::exp(xr[i] - mx);
      sum += yr[i];
    }
    const float inv = 1.f / sum;
    for (size_t i = 0; i < c; ++i) yr[i] *= inv;
  }
}

}  // namespace dlas::ukernel

// Portable layer normalization: the oracle for the vector versions (the same passes, one
// accumulator each).
#include <cmath>

#include "algo/microkernels/f32-vlayernorm/f32_vlayernorm.h"

namespace dlas::ukernel {

void f32_vlayernorm__scalar(size_t rows, size_t c, const float* x, const float* gamma,
                            const float* beta, float eps, float* y) {
  for (size_t r = 0; r < rows; ++r) {
    const float* xr = x + r * c;
    float* yr = y + r * c;
    float sum = 0.f;
    for (size_t i = 0; i < c; ++i) sum += xr[i];
    const float mean = sum / static_cast<float>(c);
    float sq = 0.f;
    for (size_t i = 0; i < c; ++i) sq += (xr[i] - mean) * (xr[i] - mean);
    const float inv = 1.f / std::sqrt(sq / static_cast<float>(c) + eps);
    for (size_t i = 0; i < c; ++i) yr[i] = (xr[i] - mean) * inv * gamma[i] + beta[i];
  }
}

}  // namespace dlas::ukernel

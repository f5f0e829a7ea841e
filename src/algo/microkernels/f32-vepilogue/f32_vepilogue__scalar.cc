// Portable epilogue: the oracle for the vector versions.
#include <cmath>

#include "algo/microkernels/f32-vepilogue/f32_vepilogue.h"

namespace dlas::ukernel {

void f32_vepilogue__scalar(size_t n, float* y, float bias, const float* residual, Activation act,
                           float p0, float p1) {
  for (size_t i = 0; i < n; ++i) {
    float v = y[i] + bias;
    if (residual) v += residual[i];
    switch (act) {
      case Activation::kNone:
        break;
      case Activation::kRelu:
        v = v > 0.f ? v : 0.f;
        break;
      case Activation::kClip:  // ONNX order: max with min first, then min with max
        v = v < p0 ? p0 : v;
        v = v > p1 ? p1 : v;
        break;
      case Activation::kSigmoid:
        v = 1.f / (1.f + std::exp(-v));
        break;
      case Activation::kSilu:
        v = v / (1.f + std::exp(-v));
        break;
      case Activation::kHardSigmoid: {
        const float t = p0 * v + p1;
        v = t < 0.f ? 0.f : (t > 1.f ? 1.f : t);
        break;
      }
      case Activation::kHardSwish: {
        const float t = v / 6.f + 0.5f;
        v = v * (t < 0.f ? 0.f : (t > 1.f ? 1.f : t));
        break;
      }
      case Activation::kErf: {
        v = std::erf(v);
        break;
      }
      case Activation::kGelu: {
        v = (v * (std::erf(v / p0) + 1.f)) * 0.5f;
        break;
      }
    }
    y[i] = v;
  }
}

}  // namespace dlas::ukernel

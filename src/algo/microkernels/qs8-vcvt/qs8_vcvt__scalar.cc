// scalar 8-bit (de)quantization: the arithmetic of qs8_vcvt.h, literally.
#include <cmath>

#include "algo/microkernels/qs8-vcvt/qs8_vcvt.h"

namespace dlas::ukernel {

void qs8_vcvt__scalar_quantize(size_t n, const float* x, const QS8CvtParams& p, uint8_t* y) {
  const float lo = p.is_signed ? -128.f : 0.f, hi = p.is_signed ? 127.f : 255.f;
  const float zp = static_cast<float>(p.zero_point);
  for (size_t i = 0; i < n; ++i) {
    float v = std::nearbyint(x[i] / p.scale) + zp;
    v = v < lo ? lo : (v > hi ? hi : v);  // NaN compares false both ways and stays NaN
    const int32_t q = v == v ? static_cast<int32_t>(v) : p.zero_point;
    y[i] = static_cast<uint8_t>(q);  // two's complement byte for s8
  }
}

void qs8_vcvt__scalar_dequantize(size_t n, const uint8_t* x, const QS8CvtParams& p, float* y) {
  for (size_t i = 0; i < n; ++i) {
    const int32_t q = p.is_signed ? int32_t{static_cast<int8_t>(x[i])} : int32_t{x[i]};
    y[i] = static_cast<float>(q - p.zero_point) * p.scale;
  }
}

}  // namespace dlas::ukernel

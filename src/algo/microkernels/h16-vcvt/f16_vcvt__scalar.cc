// Portable f16 rows (the oracle path): dlas::f16_to_f32 / f32_to_f16.
#include "algo/microkernels/h16-vcvt/h16_vcvt.h"

namespace dlas::ukernel {

void f16_vcvt__scalar_widen(size_t n, const uint16_t* x, float* y) {
  for (size_t i = 0; i < n; ++i) y[i] = f16_to_f32(x[i]);
}

void f16_vcvt__scalar_narrow(size_t n, const float* x, uint16_t* y) {
  for (size_t i = 0; i < n; ++i) y[i] = f32_to_f16(x[i]);
}

}  // namespace dlas::ukernel

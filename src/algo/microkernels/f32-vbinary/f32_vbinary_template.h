// Binary elementwise loops written once; GCC vectorizes them with the including
// translation unit's flags (f32_vbinary__<isa>.cc). Internal linkage (anonymous namespace).
// Division stays a division (no reciprocal) so results equal the reference bit for bit.
#pragma once

#include <cstddef>

#include "algo/microkernels/f32-vbinary/f32_vbinary.h"

namespace dlas::ukernel {
namespace {

template <int kOp>
inline float vbin(float a, float b) {
  if constexpr (kOp == 0) return a + b;
  if constexpr (kOp == 1) return a - b;
  if constexpr (kOp == 2) return a * b;
  return a / b;
}

template <int kOp>
void vbin_vv(size_t n, const float* a, const float* b, float* y) {  // y may alias a or b
  for (size_t i = 0; i < n; ++i) y[i] = vbin<kOp>(a[i], b[i]);
}
template <int kOp>
void vbin_vs(size_t n, const float* a, const float* b, float* y) {
  const float s = *b;
  for (size_t i = 0; i < n; ++i) y[i] = vbin<kOp>(a[i], s);
}
template <int kOp>
void vbin_sv(size_t n, const float* a, const float* b, float* y) {
  const float s = *a;
  for (size_t i = 0; i < n; ++i) y[i] = vbin<kOp>(s, b[i]);
}

constexpr F32VBinaryKernels make_vbinary_kernels() {
  return F32VBinaryKernels{{&vbin_vv<0>, &vbin_vv<1>, &vbin_vv<2>, &vbin_vv<3>},
                           {&vbin_vs<0>, &vbin_vs<1>, &vbin_vs<2>, &vbin_vs<3>},
                           {&vbin_sv<0>, &vbin_sv<1>, &vbin_sv<2>, &vbin_sv<3>}};
}

}  // namespace
}  // namespace dlas::ukernel

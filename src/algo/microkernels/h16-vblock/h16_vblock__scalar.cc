// Portable 16-bit channel rows <-> f32 channel blocks (the oracle path): the scalar
// conversions of dlas/core/dtype.h, element by element.
#include "algo/microkernels/h16-vblock/h16_vblock.h"

namespace dlas::ukernel {
namespace {

template <DType T>
void widen(size_t pixels, const uint16_t* x, size_t plane, size_t channels, float* y) {
  for (size_t p = 0; p < pixels; ++p)
    for (size_t c = 0; c < kH16Block; ++c) {
      const uint16_t h = c < channels ? x[c * plane + p] : 0;
      y[p * kH16Block + c] = T == DType::kF16 ? f16_to_f32(h) : bf16_to_f32(h);
    }
}

template <DType T>
void narrow(size_t pixels, const float* y, size_t channels, uint16_t* x, size_t plane) {
  for (size_t c = 0; c < channels; ++c)
    for (size_t p = 0; p < pixels; ++p) {
      const float f = y[p * kH16Block + c];
      x[c * plane + p] = T == DType::kF16 ? f32_to_f16(f) : f32_to_bf16(f);
    }
}

}  // namespace

DLAS_H16_VBLOCK_ENTRY(f16_vblock__scalar, DType::kF16)
DLAS_H16_VBLOCK_ENTRY(bf16_vblock__scalar, DType::kBF16)

}  // namespace dlas::ukernel

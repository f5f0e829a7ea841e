// 16-bit NCHW channel rows <-> f32 channel blocks of 16 (nchw16c's [pixel][16]): widen and
// transpose in one pass, and back with one rounding (nearest even; NaN stays NaN). The
// 16-bit depthwise convs run the f32 blocked depthwise kernels on them, one chunk of
// channels at a time inside a thread's cache (widened_h16.cc).
//   widen(pixels, x, plane, channels, y):  y[p * 16 + c] = x[c * plane + p] widened
//                                          (c < channels; lanes c >= channels are zero)
//   narrow(pixels, y, channels, x, plane): x[c * plane + p] = y[p * 16 + c] narrowed
//                                          (c < channels; nothing else is written)
// One list: h16-vblock/h16_vblock.inc; each ISA in its own TU.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "dlas/core/dtype.h"
#include "dlas/hw/isa.h"

namespace dlas::ukernel {

inline constexpr size_t kH16Block = 16;  // channels per block (nchw16c)

using H16BlockWidenFn = void (*)(size_t pixels, const uint16_t* x, size_t plane, size_t channels,
                                 float* y);
using H16BlockNarrowFn = void (*)(size_t pixels, const float* y, size_t channels, uint16_t* x,
                                  size_t plane);

#define X(prefix, type, isa)                                                                      \
  void prefix##_widen(size_t pixels, const uint16_t* x, size_t plane, size_t channels, float* y); \
  void prefix##_narrow(size_t pixels, const float* y, size_t channels, uint16_t* x, size_t plane);
#include "algo/microkernels/h16-vblock/h16_vblock.inc"
#undef X

// Defines prefix_widen and prefix_narrow as a TU's widen<T> / narrow<T> templates.
#define DLAS_H16_VBLOCK_ENTRY(prefix, T)                                                           \
  void prefix##_widen(size_t pixels, const uint16_t* x, size_t plane, size_t channels, float* y) { \
    widen<T>(pixels, x, plane, channels, y);                                                       \
  }                                                                                                \
  void prefix##_narrow(size_t pixels, const float* y, size_t channels, uint16_t* x,                \
                       size_t plane) {                                                             \
    narrow<T>(pixels, y, channels, x, plane);                                                      \
  }

struct H16Vblock {
  const char* name;  // "bf16_vblock__avx512"
  DType type;        // kF16 or kBF16
  Isa isa;
  H16BlockWidenFn widen;
  H16BlockNarrowFn narrow;
};

// Every entry, in h16_vblock.inc order.
const std::vector<H16Vblock>& h16_vblock_kernels();
// The entry of the highest listed ISA <= isa for `type`.
const H16Vblock& h16_vblock_for(DType type, Isa isa);

}  // namespace dlas::ukernel

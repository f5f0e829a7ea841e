// 16-bit float row conversions: widen (f16 / bf16 -> f32, exact) and narrow (f32 -> f16 /
// bf16, round to nearest even, NaN stays NaN). The 16-bit conv algorithms widen inputs,
// weight panels and residual rows with them and narrow every output row once, after the
// f32 epilogue. One list: h16-vcvt/h16_vcvt.inc; each ISA in its own TU (F16C vcvtph2ps /
// vcvtps2ph for f16, shifts and a rounding add for bf16).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "dlas/core/dtype.h"
#include "dlas/hw/isa.h"

namespace dlas::ukernel {

using H16WidenFn = void (*)(size_t n, const uint16_t* x, float* y);
using H16NarrowFn = void (*)(size_t n, const float* x, uint16_t* y);

#define X(prefix, type, isa)                                  \
  void prefix##_widen(size_t n, const uint16_t* x, float* y); \
  void prefix##_narrow(size_t n, const float* x, uint16_t* y);
#include "algo/microkernels/h16-vcvt/h16_vcvt.inc"
#undef X

struct H16Vcvt {
  const char* name;  // "f16_vcvt__avx2"
  DType type;        // kF16 or kBF16
  Isa isa;
  H16WidenFn widen;
  H16NarrowFn narrow;
};

// Every entry, in h16_vcvt.inc order.
const std::vector<H16Vcvt>& h16_vcvt_kernels();
// The entry of the highest listed ISA <= isa for `type` (kF16 or kBF16).
const H16Vcvt& h16_vcvt_for(DType type, Isa isa);

}  // namespace dlas::ukernel

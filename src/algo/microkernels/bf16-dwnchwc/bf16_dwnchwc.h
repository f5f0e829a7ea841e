// bf16 depthwise convolution microkernels on 16-bit channel blocks (nchw16c holding
// bfloat16): the f32 blocked depthwise tile (f32-dwnchwc, same arguments, same tap order)
// with the input, the residual and the output read and written as bf16 and widened or
// rounded in registers, so no pass widens the tensors around the layer. Arithmetic is f32
// FMA on exactly widened inputs and f32 weights (the bf16 weights widened exactly), rounded
// once to bf16 at the store (nearest even, NaNs quieted, as dlas::f32_to_bf16): the results
// equal the widened f32 twin's bit for bit. What it saves is the widening pass and, where
// a layer is bound by its bytes, half of them; no bf16 dot-product unit is needed, only
// AVX-512.
//
// Each set has two kernels per tile shape: bf16 out (the clamp epilogues, fused) and f32 out
// (for activations the caller applies to the f32 tile before rounding it). One list:
// bf16-dwnchwc/bf16_dwnchwc.inc; bodies: f32-dwnchwc/f32_dwnchwc_template.h, one TU per ISA.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "algo/microkernels/f32-dwnchwc/f32_dwnchwc.h"
#include "dlas/hw/isa.h"

namespace dlas::ukernel {

using Bf16DwNchwcArgs = DwNchwcArgs<uint16_t>;
using Bf16DwNchwcFn = void (*)(const Bf16DwNchwcArgs& a, const uint16_t* x, const float* w,
                               uint16_t* y);
using Bf16DwNchwcF32OutFn = void (*)(const Bf16DwNchwcArgs& a, const uint16_t* x, const float* w,
                                     float* y);

struct Bf16DwNchwcUkernels {
  const char* name;  // "bf16_dwnchwc_x16__avx512"
  Isa isa;
  int lanes;
  int accumulators;
  // As F32DwNchwcUkernels::select, bf16 out and f32 out.
  Bf16DwNchwcFn (*select)(int pixels, int stride, int kw);
  Bf16DwNchwcF32OutFn (*select_f32_out)(int pixels, int stride, int kw);

  int max_pixels() const {
    return accumulators < kDwNchwcMaxPixels ? accumulators : kDwNchwcMaxPixels;
  }
};

// The production sets (X rows) and the test-only ones (T rows).
const std::vector<Bf16DwNchwcUkernels>& bf16_dwnchwc_ukernels();
const std::vector<Bf16DwNchwcUkernels>& bf16_dwnchwc_test_only_ukernels();
// The production set the ISA path can run, or nullptr.
const Bf16DwNchwcUkernels* bf16_dwnchwc_for(Isa isa);

}  // namespace dlas::ukernel

namespace dlas::ukernel {
#define X(name, isa, lanes, acc)                      \
  Bf16DwNchwcFn name(int pixels, int stride, int kw); \
  Bf16DwNchwcF32OutFn name##_f32_out(int pixels, int stride, int kw);
#define T(name, isa, lanes, acc) X(name, isa, lanes, acc)
#include "algo/microkernels/bf16-dwnchwc/bf16_dwnchwc.inc"
#undef T
#undef X
}  // namespace dlas::ukernel

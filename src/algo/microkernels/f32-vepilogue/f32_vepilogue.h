// f32 epilogue microkernels: y[i] = act(y[i] + bias + (residual ? residual[i] : 0)),
// the one fused bias/residual/activation path every algorithm shares (through
// dlas::apply_epilogue). One list: f32-vepilogue/f32_vepilogue.inc.
#pragma once

#include <cstddef>

#include "dlas/algo/conv.h"

namespace dlas::ukernel {

using F32VEpilogueFn = void (*)(size_t n, float* y, float bias, const float* residual,
                                Activation act, float p0, float p1);

#define X(fn, isa)                                                                         \
  void fn(size_t n, float* y, float bias, const float* residual, Activation act, float p0, \
          float p1);
#include "algo/microkernels/f32-vepilogue/f32_vepilogue.inc"
#undef X

// The kernel of the highest listed ISA <= isa.
F32VEpilogueFn f32_vepilogue_for(Isa isa);

}  // namespace dlas::ukernel

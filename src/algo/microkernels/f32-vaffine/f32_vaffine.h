// f32 per-channel affine microkernels: y = act(x * scale + shift) over one run of pixels,
// the standalone BatchNorm (with the Concat before it and the activation after it folded in:
// ChannelAffine). One list: f32-vaffine/f32_vaffine.inc.
#pragma once

#include <cstddef>

#include "dlas/algo/conv.h"

namespace dlas::ukernel {

// y[p * lanes + l] = act(x[p * lanes + l] * scale[l] + shift[l]) for p < pixels, l < lanes:
// one channel's plane (lanes 1) or one channel block of a blocked layout (lanes: the block).
// The activation as the epilogue computes it (f32_vepilogue); y may equal x.
using F32VAffineFn = void (*)(size_t pixels, size_t lanes, const float* x, const float* scale,
                              const float* shift, float* y, Activation act, float p0, float p1);

#define X(fn, isa)                                                                             \
  void fn(size_t pixels, size_t lanes, const float* x, const float* scale, const float* shift, \
          float* y, Activation act, float p0, float p1);
#include "algo/microkernels/f32-vaffine/f32_vaffine.inc"
#undef X

// The kernel of the highest listed ISA <= isa.
F32VAffineFn f32_vaffine_for(Isa isa);

}  // namespace dlas::ukernel

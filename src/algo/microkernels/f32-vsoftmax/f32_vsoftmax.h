// f32 softmax microkernels: each row of c values to exp(x - max) / sum of exp(x - max) (ONNX
// Softmax over the last axis: the attention scores of the transformers' blocks).
// One list: f32-vsoftmax/f32_vsoftmax.inc.
#pragma once

#include <cstddef>

#include "dlas/hw/isa.h"

namespace dlas::ukernel {

// Rows [0, rows) of c values at x (row r at x + r * c) into y (same layout; y may equal x).
// The exponentials are summed in f32.
using F32VSoftmaxFn = void (*)(size_t rows, size_t c, const float* x, float* y);

#define X(fn, isa) void fn(size_t rows, size_t c, const float* x, float* y);
#include "algo/microkernels/f32-vsoftmax/f32_vsoftmax.inc"
#undef X

// The kernel of the highest listed ISA <= isa.
F32VSoftmaxFn f32_vsoftmax_for(Isa isa);

}  // namespace dlas::ukernel

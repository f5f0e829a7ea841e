// f32 layer-normalization microkernels: each row of c values normalized by its own mean and
// variance, y = (x - mean) / sqrt(var + eps) * gamma + beta (ONNX LayerNormalization over the
// last axis: the channels of ConvNeXt's and the transformers' channels-last activations).
// One list: f32-vlayernorm/f32_vlayernorm.inc.
#pragma once

#include <cstddef>

#include "dlas/hw/isa.h"

namespace dlas::ukernel {

// Rows [0, rows) of c values at x (row r at x + r * c) into y (same layout; y may equal x).
// mean = sum / c, var = sum of (x - mean)^2 / c, both summed in f32; gamma and beta: c values.
using F32VLayerNormFn = void (*)(size_t rows, size_t c, const float* x, const float* gamma,
                                 const float* beta, float eps, float* y);

#define X(fn, isa)                                                                                 \
  void fn(size_t rows, size_t c, const float* x, const float* gamma, const float* beta, float eps, \
          float* y);
#include "algo/microkernels/f32-vlayernorm/f32_vlayernorm.inc"
#undef X

// The kernel of the highest listed ISA <= isa.
F32VLayerNormFn f32_vlayernorm_for(Isa isa);

}  // namespace dlas::ukernel

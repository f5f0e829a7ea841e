// Per-ISA f32 binary elementwise kernels behind include/dlas/algo/eltwise.h. One list:
// f32_vbinary.inc; bodies: f32_vbinary_template.h.
#pragma once

#include <cstddef>

#include "dlas/algo/eltwise.h"

namespace dlas::ukernel {

using F32VBinaryFn = void (*)(size_t n, const float* a, const float* b, float* y);

struct F32VBinaryKernels {
  F32VBinaryFn vv[4];  // y[i] = a[i] op b[i]      (indexed by BinaryOp)
  F32VBinaryFn vs[4];  // y[i] = a[i] op b[0]
  F32VBinaryFn sv[4];  // y[i] = a[0] op b[i]
};

#define X(name, isa) extern const F32VBinaryKernels name;
#include "algo/microkernels/f32-vbinary/f32_vbinary.inc"
#undef X

const F32VBinaryKernels& f32_vbinary_for(Isa isa);

}  // namespace dlas::ukernel

// Declarations of every f32 Winograd transform kernel, derived from f32_wino.inc.
#pragma once

#include "algo/microkernels/f32-wino/f32_wino.h"

namespace dlas::ukernel {
#define X(name, isa, lanes)                                                                    \
  void name##_input_f2(size_t n, const float* d, size_t ld, float* v, size_t vs);              \
  void name##_input_f4(size_t n, const float* d, size_t ld, float* v, size_t vs);              \
  void name##_output_f2(size_t n, const float* mm, size_t ms, float* o, size_t os, float bias, \
                        float min, float max);                                                 \
  void name##_output_f4(size_t n, const float* mm, size_t ms, float* o, size_t os, float bias, \
                        float min, float max);
#define T(name, isa, lanes) X(name, isa, lanes)
#include "algo/microkernels/f32-wino/f32_wino.inc"
#undef T
#undef X
}  // namespace dlas::ukernel

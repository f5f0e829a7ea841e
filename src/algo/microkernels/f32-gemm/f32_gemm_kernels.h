// Declarations of every f32 GEMM microkernel, derived from f32_gemm.inc.
#pragma once

#include "algo/microkernels/f32-gemm/f32_gemm.h"

namespace dlas::ukernel {
#define X(fn, isa, mr, nr)                                                                    \
  void fn(size_t m, size_t n, size_t k, const float* a, const float* b, const int64_t* b_off, \
          float* c, size_t ldc, const float* bias, bool accumulate, float min, float max);
#include "algo/microkernels/f32-gemm/f32_gemm.inc"
#undef X
}  // namespace dlas::ukernel

// Declarations of every int8 GEMM microkernel, derived from qs8_gemm.inc.
#pragma once

#include "algo/microkernels/qs8-gemm/qs8_gemm.h"

namespace dlas::ukernel {
#define X(fn, isa, mr, nr, kr, kb)                                                          \
  void fn(size_t m, size_t n, size_t kq, const void* a, const void* b, void* c, size_t ldc, \
          const QS8GemmParams& p);
#include "algo/microkernels/qs8-gemm/qs8_gemm.inc"
#undef X
}  // namespace dlas::ukernel

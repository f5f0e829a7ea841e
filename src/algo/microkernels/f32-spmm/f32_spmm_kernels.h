// Declarations of every f32 SpMM microkernel, derived from f32_spmm.inc.
#pragma once

#include "algo/microkernels/f32-spmm/f32_spmm.h"

namespace dlas::ukernel {
#define X(fn, isa, lanes, nv, br, bc)                                                         \
  void fn(size_t pixels, size_t rows, const float* in, size_t in_stride, const float* w,      \
          const int32_t* dmap, const uint32_t* nnz, float* out, size_t out_stride, float min, \
          float max, bool accumulate);                                                        \
  void fn##_rows(size_t out_rows, size_t nvr, size_t rows, const float* in, size_t in_row,    \
                 const float* w, const int32_t* dmap, const uint32_t* nnz, float* out,        \
                 size_t out_row, size_t out_stride, float min, float max, bool accumulate);
#include "algo/microkernels/f32-spmm/f32_spmm.inc"
#undef X
}  // namespace dlas::ukernel

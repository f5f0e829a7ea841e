// AVX2+FMA SpMM kernels: 8-lane vectors (ymm). Only this ISA's entries of f32_spmm.inc are defined
// here.
#include "algo/microkernels/f32-spmm/f32_spmm_kernels.h"
#include "algo/microkernels/f32-spmm/f32_spmm_template.h"

namespace dlas::ukernel {

#define SPMM_DEFINE(fn, lanes, nv, br, bc)                                                      \
  void fn(size_t pixels, size_t rows, const float* in, size_t in_stride, const float* w,        \
          const int32_t* dmap, const uint32_t* nnz, float* out, size_t out_stride, float min,   \
          float max, bool accumulate) {                                                         \
    f32_spmm_vec<lanes, nv, br, bc>(pixels, rows, in, in_stride, w, dmap, nnz, out, out_stride, \
                                    min, max, accumulate);                                      \
  }                                                                                             \
  void fn##_rows(size_t out_rows, size_t nvr, size_t rows, const float* in, size_t in_row,      \
                 const float* w, const int32_t* dmap, const uint32_t* nnz, float* out,          \
                 size_t out_row, size_t out_stride, float min, float max, bool accumulate) {    \
    f32_spmm_rows<lanes, nv, br>(out_rows, nvr, rows, in, in_row, w, dmap, nnz, out, out_row,   \
                                 out_stride, min, max, accumulate);                             \
  }
#define SPMM_kScalar(...)
#define SPMM_kAvx2(...)
#define SPMM_kAvx512(...)
#undef SPMM_kAvx2
#define SPMM_kAvx2(...) SPMM_DEFINE(__VA_ARGS__)
#define X(fn, isa, lanes, nv, br, bc) SPMM_##isa(fn, lanes, nv, br, bc)
#include "algo/microkernels/f32-spmm/f32_spmm.inc"
#undef X

}  // namespace dlas::ukernel

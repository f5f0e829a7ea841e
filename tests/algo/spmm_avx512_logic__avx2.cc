// Test-only: the 16-lane (AVX-512) SpMM kernel template compiled with AVX2 flags.
#include "algo/spmm_avx512_logic.h"

// 64-byte vectors returned by inline helpers without AVX-512: GCC warns that such a
// function's ABI differs; every helper here has internal linkage and is inlined.
#pragma GCC diagnostic ignored "-Wpsabi"

#include "algo/microkernels/f32-spmm/f32_spmm_template.h"

namespace dlas::test {
namespace {

template <int L, int NV, int BR, int BC>
void spmm_16_lanes(size_t pixels, size_t rows, const float* in, size_t in_stride, const float* w,
                   const int32_t* dmap, const uint32_t* nnz, float* out, size_t out_stride,
                   float min, float max, bool accumulate) {
  ukernel::f32_spmm_vec<L, NV, BR, BC>(pixels, rows, in, in_stride, w, dmap, nnz, out, out_stride,
                                       min, max, accumulate);
}

template <int L, int NV, int BR>
void spmm_rows_16_lanes(size_t out_rows, size_t nvr, size_t rows, const float* in, size_t in_row,
                        const float* w, const int32_t* dmap, const uint32_t* nnz, float* out,
                        size_t out_row, size_t out_stride, float min, float max, bool accumulate) {
  ukernel::f32_spmm_rows<L, NV, BR>(out_rows, nvr, rows, in, in_row, w, dmap, nnz, out, out_row,
                                    out_stride, min, max, accumulate);
}

}  // namespace

const std::vector<ukernel::F32SpmmUkernel>& avx512_logic_spmm_ukernels() {
  static const std::vector<ukernel::F32SpmmUkernel> table = [] {
    std::vector<ukernel::F32SpmmUkernel> t;
#define X(fn, isa, lanes, nv, br, bc)                                                           \
  if (Isa::isa == Isa::kAvx512)                                                                 \
    t.push_back({#fn, Isa::kAvx2, lanes, nv, br, bc,                                            \
                 &spmm_16_lanes<(Isa::isa == Isa::kAvx512 ? lanes : 16), nv, br, bc>,           \
                 bc == 1 ? &spmm_rows_16_lanes<(Isa::isa == Isa::kAvx512 ? lanes : 16), nv, br> \
                         : nullptr});
#include "algo/microkernels/f32-spmm/f32_spmm.inc"
#undef X
    return t;
  }();
  return table;
}

}  // namespace dlas::test

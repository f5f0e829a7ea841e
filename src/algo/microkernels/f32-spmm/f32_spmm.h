// f32 sparse x dense matrix multiply microkernels: the 'Fast Sparse ConvNets' design
// (Elsen et al. 2019), vectorised along pixels so that NCHW activations need no transpose:
//
//   out[k][p] = clamp(bias[k] + sum_{r : W[k][r] != 0} W[k][r] * in[r][p], min, max)
//                                               (k < rows, p < pixels)
//
// With `accumulate` the sums start from the out[k][p] already stored (+ bias[k]): a
// reduction split into chunks (each packed with its own W columns, bias in the first)
// keeps each chunk's input rows in L1; the last chunk applies the clamp.
//
// The sparse operand W is packed into BRxBC blocks (BR output channels x BC consecutive
// input rows, BSR; 1x1 is CSR) by pack_f32_spmm(). Per block row b (output channels
// [b*BR, b*BR + BR)): BR biases, then for each stored block its BC*BR values ([bc][br],
// so one input vector meets BR broadcasts). Each stored block has one int32 entry in the
// delta map: the BYTE offset to add to the input pointer to reach the block's first input
// row (the pointer restarts at `in` for every block row, so the first delta of a row is
// absolute). The inner loop is thus load-delta, add, load input vectors, broadcast, FMA:
// no index arithmetic. Rows r of the input are in + r * in_stride bytes apart, each with
// at least `pixels` readable floats (the kernel never reads past `pixels`).
//
// The kernel walks pixel tiles of MR = NV * lanes (outer) and all block rows (inner), so a
// tile's input rows stay in L1 while the (small, sparse) weights stream from L2; the
// remaining whole vectors form ONE narrower tile (every vector count up to NV is
// instantiated), then one narrower (4-lane) vector, then one-pixel tiles. Tiles with
// fewer than 8 accumulators split each row's nonzeros over several accumulator sets (FMA
// latency), summed before the store. Output row k is at out + k * out_stride floats; rows
// past `rows` in the last block are computed from zero padding and not stored.
//
// One list: f32-spmm/f32_spmm.inc. Bodies: f32-spmm/f32_spmm_template.h, one
// instantiation per ISA translation unit.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "dlas/algo/sparse.h"
#include "dlas/hw/isa.h"

namespace dlas::ukernel {

using F32SpmmFn = void (*)(size_t pixels, size_t rows, const float* in, size_t in_stride,
                           const float* w, const int32_t* dmap, const uint32_t* nnz, float* out,
                           size_t out_stride, float min, float max, bool accumulate);

// The same product over out_rows pixel rows of nvr whole vectors each (nvr * lanes pixels):
// pixel (y, x) of input row r at in + y * in_row BYTES (+ the delta map's offset), of
// output row k at out + k * out_stride + y * out_row floats. A conv's output rows go
// straight into NCHW (no scratch, no padding columns computed); tiles are 2-D (e.g. 2 rows
// of 4 vectors on a 32-wide output) so they keep NV vectors. Only for BC = 1.
using F32SpmmRowsFn = void (*)(size_t out_rows, size_t nvr, size_t rows, const float* in,
                               size_t in_row, const float* w, const int32_t* dmap,
                               const uint32_t* nnz, float* out, size_t out_row, size_t out_stride,
                               float min, float max, bool accumulate);

struct F32SpmmUkernel {
  const char* name;  // "f32_spmm_32x4x1__avx2": MR pixels x BR x BC block
  Isa isa;
  int lanes, nv, br, bc;
  int mr() const { return lanes * nv; }
  F32SpmmFn fn;
  F32SpmmRowsFn rows_fn;  // nullptr when BC > 1
};

// Every kernel built, in f32_spmm.inc order.
const std::vector<F32SpmmUkernel>& f32_spmm_ukernels();
// The kernel for block shape `block` on `isa` with the most pixel vectors <= nv among
// those of the highest listed ISA <= isa that has that block shape; nullptr when no
// kernel has the block shape.
const F32SpmmUkernel* find_f32_spmm(Isa isa, SparseBlock block, int nv);

// W packed for one kernel block shape (see above). Block row b starts at
// w[w_off[b]], dmap[d_off[b]]; nnz[b] stored blocks.
struct F32SpmmPacked {
  SparseBlock block;
  int64_t rows = 0;  // output channels
  std::vector<float> w;
  std::vector<int32_t> dmap;
  std::vector<uint32_t> nnz;
  std::vector<int64_t> w_off, d_off;  // block_rows + 1 entries each
  int64_t nnz_blocks() const { return d_off.empty() ? 0 : d_off.back(); }
  size_t bytes() const {
    return w.size() * sizeof(float) + dmap.size() * sizeof(int32_t) + nnz.size() * sizeof(uint32_t);
  }
};

// Packs the sparse matrix m ([rows][cols], any block shape) with input rows in_stride
// FLOATS apart; bias [rows] or null. A block whose BC rows run past cols is moved back to
// start at cols - BC (its values shifted to match), so the kernel only reads real input
// rows; needs cols >= BC. Throws kUnsupported when a byte offset overflows int32.
F32SpmmPacked pack_f32_spmm(const SparseMatrix& m, const float* bias, int64_t in_stride);
// The same with input row r at in + row_off[r] floats (any order: the deltas may be
// negative), for direct convolution where row r = (c, ky, kx) is a tap offset into the
// padded input. BC must be 1 (the kernel steps BC rows by one stride).
F32SpmmPacked pack_f32_spmm(const SparseMatrix& m, const float* bias,
                            const std::vector<int64_t>& row_off);

// Scalar reference of the contract (the test oracle): dense W [rows][cols] row-major.
void f32_spmm_reference(size_t pixels, size_t rows, size_t cols, const float* in,
                        size_t in_stride_floats, const float* w, const float* bias, float* out,
                        size_t out_stride, float min, float max);

}  // namespace dlas::ukernel

// Declarations of every f32 SpMM microkernel, derived from f32_spmm.inc.
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

// The machinery the sparse conv algorithms (sparse-1x1, sparse-gemm, sparse-direct,
// sparse-spatial-pack) share. They compute, per image and group, out[Kg][P] = W[Kg][R] x B[R][P]
// with the f32-spmm microkernels (src/algo/microkernels/f32-spmm/f32_spmm.h): W encoded once
// from the DENSE weights (exact zeros dropped, so the result is exact on any weights) as CSR or
// BSR, B either the input itself (1x1 stride-1 unpadded convs: input channel r is row r) or a
// packed [R][nc] pixel block (im2col; for 1x1 strided/padded convs just the subsampled input).
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "algo/microkernels/f32-spmm/f32_spmm.h"
#include "dlas/algo/conv.h"

namespace dlas::conv_detail {

// How threads share the work of one conv.
enum class SparseSplit {
  kBlocks,    // threads take whole pixel blocks (each packs its own B block)
  kChannels,  // one shared B block at a time; threads split output channels (by nonzeros)
  kPixels,    // one shared B block at a time; threads split its pixel tiles
};

struct SparseConvConfig {
  int64_t format = 0;  // sparse_format_knob() value
  int64_t vecs = 4;    // pixel vectors per microkernel tile (capped per block shape)
  int64_t nc = 0;      // pixels per B block (0: all)
  SparseSplit split = SparseSplit::kPixels;
  bool direct = false;  // B is the input itself (1x1, stride 1, no padding)
  // Direct convolution, no im2col: the input is copied once per image into zero-padded,
  // stride-phase-split planes (phase (py, px) of channel c holds padded pixels (i*sh + py,
  // j*sw + px)), so every tap (c, ky, kx) is ONE constant offset into that buffer for all
  // output pixels of a "wide" grid OH x QW (QW = ceil(padded W / sw) >= OW; the QW - OW
  // extra columns per row are computed into scratch and dropped when copying out). B row r
  // is then the buffer at tap offset r: the SpMM's delta map walks taps directly. Split
  // kPixels or kChannels; BRx1 formats only (1x4 falls back to CSR).
  bool implicit = false;
  // implicit: input channels per reduction chunk (0: auto, sized so a tile's input rows
  // stay in L1 while every block row walks them; >= C: one chunk). The kernels continue
  // the stored sums chunk after chunk (their `accumulate` flag).
  int64_t kc = 0;
  // implicit spmm: 1 (default) writes output rows straight into NCHW when OW is a multiple
  // of the vector lanes (2-D tiles, F32SpmmRowsFn); 0 always computes the wide grid.
  int64_t rows = 1;
  // sparse-spatial-pack (implies implicit): weights in VCx1 blocks (vc output channels x
  // one tap; 0: sparse_spatial_vc), output tiles of vh x vw pixels x vc channels held in
  // registers with lanes over channels (f32-sspack kernels); split kPixels = tiles.
  bool spatial = false;
  int64_t vc = 0, vh = 2, vw = 4;
};

// "format" knob: 0 auto (chosen from the weights at prepare: the BRx1 block shape whose
// blocks are >= 80% nonzero, else CSR), 1 csr, 2 bsr4x1, 3 bsr8x1, 4 bsr1x4.
KnobSpec sparse_format_knob();
KnobSpec sparse_vecs_knob();
// "kc" knob (implicit algorithms): input channels per reduction chunk, 0 auto.
KnobSpec sparse_chunk_knob();
// VC sparse-spatial-pack's auto (vc knob 0) picks for weights w on isa.
int64_t sparse_spatial_vc(Isa isa, const ConvProblem& p, const float* w);
// The block shape `format` selects for weights w (auto looks at w).
SparseBlock sparse_block_for(int64_t format, const ConvProblem& p, const float* w);

std::unique_ptr<PreparedConv> prepare_sparse_conv(const ConvProblem& p, const float* w,
                                                  const float* bias, const SparseConvConfig& c,
                                                  Isa isa);

}  // namespace dlas::conv_detail

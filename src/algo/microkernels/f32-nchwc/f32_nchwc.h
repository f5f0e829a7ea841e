// f32 direct convolution microkernels on blocked activations (NCHWc, dlas/algo/layout.h):
// one output tile of P pixels along an output row (or of R whole rows of P pixels each, on
// small planes) x NV output-channel blocks of `lanes` channels held in registers, vector
// lanes over output channels. Per reduction step
// (input channel, kernel tap) one weight vector per block is loaded and each of the P
// input pixels is broadcast and FMA'd into it (the register blocking oneDNN's and ncnn's
// direct kernels use for small planes).
//
//   y[v][p][l] = act(bias[v*lanes + l] + r[v][p][l] +
//       sum_{cb < a.cb, i < kh, j < kw, c < IB}
//         x[cb * x_cbs + i * x_khs + j * x_kws + p * S * IB + c] *
//         w[(((cb * kh + i) * kw + j) * IB + c) * NV * lanes + v * lanes + l])
//
// x points at the tile's first tap: a zero-padded input whose input-channel blocks hold IB
// channels (IB = lanes for a blocked input, 1 for an NCHW one: then `cb` counts channels),
// pixels IB floats apart and S the stride along W. y and r point at the tile's first pixel
// of its first output block, blocks y_cbs floats apart, pixels `lanes` apart. A call runs
// a.tiles such tiles one after the other along the row (x, y and r P pixels on). The clamp
// (none/relu/clip) is fused; the caller applies other activations to the stored tile.
// A tile of R > 1 rows reads its rows x_rs floats apart and writes them y_rs apart, and a
// run of such tiles steps R rows down (R * x_rs, R * y_rs): on planes of 8 columns or
// fewer, whole-row tiles read each weight vector once per R rows instead of once per row
// (the weights, not the pixels, are the stream there).
// One list: f32-nchwc/f32_nchwc.inc; bodies: f32_nchwc_template.h, one TU per ISA.
#pragma once

#include <cstddef>
#include <vector>

#include "dlas/hw/isa.h"

namespace dlas::ukernel {

struct F32NchwcArgs {
  size_t cb = 0;                // input channel blocks (NCHW input: channels)
  size_t kh = 1, kw = 1;        // kernel taps
  size_t x_cbs = 0;             // floats between input channel blocks
  size_t x_khs = 0;             // floats between kernel rows (dil_h * padded row)
  size_t x_kws = 0;             // floats between kernel columns (dil_w * IB)
  size_t y_cbs = 0;             // floats between output channel blocks
  size_t tiles = 1;             // tiles run, P pixels apart along the row (R rows down)
  size_t x_rs = 0, y_rs = 0;    // R > 1: floats between a tile's input / output rows
  const float* bias = nullptr;  // [NV * lanes] of this tile's blocks
  const float* r = nullptr;     // residual like y, or null
  float lo = 0.f, hi = 0.f;     // clamp bounds (+-inf when none)
  size_t w_pf = 0;              // weights prefetched this many floats ahead, per tap (0: none)
  bool half_last = false;       // 1x1 (kh = kw = 1), IB = lanes: the last input block holds
                                // lanes / 2 channels, its other lane steps are skipped
};

using F32NchwcFn = void (*)(const F32NchwcArgs& a, const float* x, const float* w, float* y);

// Output-channel blocks per tile (the `nv` knob) and strides along W with kernels.
inline constexpr int kNchwcBlocks[] = {1, 2, 3, 4};
inline constexpr int kNchwcMaxPixels = 24;
// Tiles of R > 1 whole rows: R in 2..kNchwcMaxRows, rows of nchwc_row_cols pixels, up to
// kNchwcMaxRowBlocks output-channel blocks, on a blocked input. (On Sapphire Rapids nv=3 and
// 4 tiles of whole rows took 1.0-1.9x the time of nv=1 ones on every 2x2 to 8x8 layer
// measured; leaving them out keeps the AVX-512 kernel unit's compile time down.)
inline constexpr int kNchwcMaxRows = 4;
inline constexpr int kNchwcMaxRowCols = 8;
inline constexpr int kNchwcMaxRowBlocks = 2;
// The row widths whole-row kernels exist for: the planes of the zoo's and torchvision's
// small layers (2x2, 4x4, 7x7, 8x8); 3, 5 and 6 would add a third to the compile time.
constexpr bool nchwc_row_cols(int cols) { return cols == 2 || cols == 4 || cols == 7 || cols == 8; }

// Whether a tile of `blocks` x `pixels` fits a set of `accumulators` and `registers`: its
// accumulators, plus its weight vectors and one broadcast, stay in registers (a tile past the
// register file spills in the inner loop: nv=4 x 3 pixels ran at 15% of peak on AVX2).
constexpr bool nchwc_tile_fits(int accumulators, int registers, int blocks, int pixels) {
  return pixels >= 1 && pixels <= kNchwcMaxPixels && pixels * blocks <= accumulators &&
         pixels * blocks + blocks + 1 <= registers;
}

// One ISA's kernel set.
struct F32NchwcUkernels {
  const char* name;  // "f32_nchwc_x16__avx512"
  Isa isa;
  int lanes;
  int accumulators;          // pixels * blocks of a tile must not exceed it
  int registers;             // the vector register file (nchwc_tile_fits)
  int default_accumulators;  // the untuned default tile's bound (measured per ISA)
  int l2_bytes_per_cycle;    // the default tile model's weight-stream rate (measured per ISA)
  // nullptr for a shape the set does not instantiate (pixels > max_pixels(blocks), stride
  // other than 1 or 2, in_lanes other than 1 or lanes; rows > 1: rows past kNchwcMaxRows,
  // pixels per row not nchwc_row_cols, blocks past kNchwcMaxRowBlocks, in_lanes
  // other than lanes, or rows * pixels past the register budget).
  F32NchwcFn (*select)(int blocks, int pixels, int in_lanes, int stride, int rows);

  bool fits(int blocks, int pixels) const {
    return nchwc_tile_fits(accumulators, registers, blocks, pixels);
  }

  int max_pixels(int blocks) const {
    int p = 0;
    while (nchwc_tile_fits(accumulators, registers, blocks, p + 1)) ++p;
    return p;
  }
};

// The production sets (the X rows of the list).
const std::vector<F32NchwcUkernels>& f32_nchwc_ukernels();
// The test-only sets (the T rows): run by the tests, never selected.
const std::vector<F32NchwcUkernels>& f32_nchwc_test_only_ukernels();
// The production set of `lanes` lanes the ISA path can run, or nullptr (nchw16c needs an
// AVX-512 path, nchw8c AVX2 or better).
const F32NchwcUkernels* f32_nchwc_for(Isa isa, int lanes);

}  // namespace dlas::ukernel

// Declarations of every kernel set, derived from f32_nchwc.inc.
namespace dlas::ukernel {
#define X(name, isa, lanes, acc, regs, dacc, l2) \
  F32NchwcFn name(int blocks, int pixels, int in_lanes, int stride, int rows);
#define T(name, isa, lanes, acc, regs, dacc, l2) X(name, isa, lanes, acc, regs, dacc, l2)
#include "algo/microkernels/f32-nchwc/f32_nchwc.inc"
#undef T
#undef X
}  // namespace dlas::ukernel

// int8 direct convolution microkernels on 8-bit channel blocks (nchw16c or nchw8c holding
// u8, dlas/algo/layout.h): the f32-nchwc register tile (P pixels along an output row x NV
// output-channel blocks) with int32 accumulators. Two designs, one per row of the list:
//   - kr = 4 (AVX512-VNNI, 16-channel blocks): vpdpbusd on quads, described below.
//   - kr = 2 (AVX2, 8-channel blocks): the driver widens the (padded) input to int16 first,
//     so that a pixel's block is 8 x s16 = 16 bytes holding four channel pairs; the weights
//     are s16 pairs ([..][4 pairs][NV][8 lanes][2 x s16]) and each step is vpmaddwd +
//     vpaddd on one pair (exact: a pair sums two products of at most 255 * 128).
// In both, a pixel's block in x is 16 bytes of four 4-byte groups. For kr = 4: Per reduction step
// (a quad of input channels of one kernel tap) one weight vector per block is loaded -- 16 output
// lanes x the quad's 4 s8 weights -- and each of the P pixels' channel quad (one dword of its
// 16-byte block) is broadcast and dot-accumulated into it:
//
//   acc[v][p][l] = init[v*16 + l] +
//       sum_{cb < a.cb, i < kh, j < kw, q < 4, e < 4}
//         x[cb * x_cbs + i * x_khs + j * x_kws + p * S * 16 + 4q + e] *
//         w[((((cb * kh + i) * kw + j) * 4 + q) * NV + v) * 64 + 4l + e]
//
// in int32 (exact: ConvProblem::validate bounds the reduction). x points at the tile's first
// tap in a blocked input whose padding holds the input's zero point (init = bias - x_zp *
// sum(w) cancels it, as for every pixel), S the stride along W; y and r at the tile's first
// pixel of its first output block, blocks y_cbs bytes apart, pixels 16 apart. The store is
// qconv.h's requantization step for step (qs8_gemm.h's QS8GemmParams: mult per lane, the
// residual, the clamp, round to nearest even, the zero point), one store of `lanes` bytes
// per pixel and block (y pixels `lanes` bytes apart). A call runs a.tiles tiles along the row, P
// pixels apart. One list: qs8_nchwc.inc.
#pragma once

#include <cstddef>
#include <cstdint>

#include "algo/microkernels/qs8-gemm/qs8_gemm.h"
#include "dlas/hw/isa.h"

namespace dlas::ukernel {

struct QS8NchwcArgs {
  size_t cb = 0;                  // input channel blocks
  size_t kh = 1, kw = 1;          // kernel taps
  size_t x_cbs = 0;               // bytes between input channel blocks
  size_t x_khs = 0;               // bytes between kernel rows (dil_h * padded row)
  size_t x_kws = 0;               // bytes between kernel columns (dil_w * 16)
  size_t y_cbs = 0;               // elements of y between output channel blocks
  size_t tiles = 1;               // tiles run, P pixels apart along the row
  const int32_t* init = nullptr;  // [NV * 16] of this tile's blocks
  const float* mult = nullptr;    // [NV * 16]
  const uint8_t* r = nullptr;     // residual like y, or null
};

using QS8NchwcFn = void (*)(const QS8NchwcArgs& a, const QS8GemmParams& p, const uint8_t* x,
                            const int8_t* w, uint8_t* y);

// The same tile without the store: the int32 sums themselves (a.init may be null: zero), y
// blocks a.y_cbs int32 apart, pixels 8 apart. The AVX2 set has it, for stride 1 (qs8-wino's
// GEMM over transformed points).
using QS8NchwcRawFn = void (*)(const QS8NchwcArgs& a, const uint8_t* x, const int8_t* w,
                               int32_t* y);

inline constexpr int kQS8NchwcMaxBlocks = 4;
inline constexpr int kQS8NchwcMaxPixels = 24;

// The widest tile of `blocks` output blocks within a budget of accumulators and registers
// (a weight vector per block and one broadcast besides the accumulators).
inline int qs8_tile_max_pixels(int blocks, int accumulators, int registers) {
  int p = 0;
  while (p < kQS8NchwcMaxPixels && (p + 1) * blocks <= accumulators &&
         (p + 1) * blocks + blocks + 1 <= registers)
    ++p;
  return p;
}

// One ISA's kernel set.
struct QS8NchwcUkernels {
  const char* name;  // "qs8_nchwc_x16__avx512vnni"
  Isa isa;
  int lanes;         // channels per block: the blocked layout the set runs (16 or 8)
  int kr;            // input channels per 4-byte group: 4 (u8 quads) or 2 (s16 pairs, widened)
  int accumulators;  // pixels * blocks of a tile must not exceed it
  int registers;     // the vector register file
  // nullptr for a shape the set does not instantiate (blocks past kQS8NchwcMaxBlocks,
  // pixels past the register budget, stride other than 1 or 2).
  QS8NchwcFn (*select)(int blocks, int pixels, int stride);

  int max_pixels(int blocks) const { return qs8_tile_max_pixels(blocks, accumulators, registers); }
};

// The set the ISA path can run whose blocks are the path's native blocked layout
// (nchw16c on AVX512-VNNI and above, nchw8c on AVX2), on a CPU that has it; nullptr on the
// AVX-512 paths without VNNI and on scalar.
const QS8NchwcUkernels* qs8_nchwc_for(Isa isa);

}  // namespace dlas::ukernel

namespace dlas::ukernel {
#define X(name, isa, lanes, kr, acc, regs) QS8NchwcFn name(int blocks, int pixels, int stride);
#include "algo/microkernels/qs8-nchwc/qs8_nchwc.inc"
#undef X
QS8NchwcRawFn qs8_nchwc_x8__avx2_raw(int blocks, int pixels);
}  // namespace dlas::ukernel

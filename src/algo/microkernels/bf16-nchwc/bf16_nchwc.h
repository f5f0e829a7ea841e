// bf16 direct convolution microkernels on 16-bit channel blocks (nchw16c holding bfloat16,
// dlas/algo/layout.h): the f32-nchwc register tile (P pixels along an output row x NV
// output-channel blocks of 16 lanes, f32 accumulators) with vdpbf16ps for the FMAs. Per
// reduction step (a pair of input channels of one kernel tap) one weight vector per block
// is loaded -- 16 output lanes x the pair -- and each of the P pixels' channel pair (one
// dword of its block) is broadcast and dot-accumulated into it:
//
//   y[v][p][l] = bf16(clamp(bias[v*16 + l] + r[v][p][l] +
//       sum_{cb < a.cb, i < kh, j < kw, q < 8, e < 2}
//         x[cb * x_cbs + i * x_khs + j * x_kws + p * S * 16 + 2q + e] *
//         w[((((cb * kh + i) * kw + j) * 8 + q) * NV + v) * 32 + 2l + e]))
//
// (vdpbf16ps: each pair's two products summed into the f32 accumulator, round to nearest
// even, denormals flushed). x points at the tile's first tap in a zero-padded blocked input,
// S the stride along W; y and r at the tile's first pixel of its first output block, blocks
// y_cbs elements apart, pixels 16 apart. The epilogue adds the bias and the residual
// (widened exactly), clamps (none / relu / clip) and rounds once to bf16 (nearest even), or
// stores f32 for the caller's activation (yf). A call runs a.tiles tiles along the row, P
// pixels apart. One list: bf16_nchwc.inc.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "dlas/hw/isa.h"

namespace dlas::ukernel {

struct Bf16NchwcArgs {
  size_t cb = 0;                // input channel blocks
  size_t kh = 1, kw = 1;        // kernel taps
  size_t x_cbs = 0;             // elements between input channel blocks
  size_t x_khs = 0;             // elements between kernel rows (dil_h * padded row)
  size_t x_kws = 0;             // elements between kernel columns (dil_w * 16)
  size_t y_cbs = 0;             // elements between output channel blocks
  size_t tiles = 1;             // tiles run, P pixels apart along the row
  const float* bias = nullptr;  // [NV * 16] of this tile's blocks
  const uint16_t* r = nullptr;  // residual like y, or null
  float lo = 0.f, hi = 0.f;     // clamp bounds (+-inf when none)
  // Non-null: the tile is stored here in f32 instead (bias and residual added, no clamp,
  // no rounding), blocks yf_cbs floats apart, pixels 16 apart, for the caller to apply an
  // activation the kernels do not fuse and round once.
  float* yf = nullptr;
  size_t yf_cbs = 0;
};

using Bf16NchwcFn = void (*)(const Bf16NchwcArgs& a, const uint16_t* x, const uint16_t* w,
                             uint16_t* y);

inline constexpr int kBf16NchwcMaxBlocks = 4;
inline constexpr int kBf16NchwcMaxPixels = 24;

// One ISA's kernel set.
struct Bf16NchwcUkernels {
  const char* name;  // "bf16_nchwc_x16__avx512bf16"
  Isa isa;
  int accumulators;  // pixels * blocks of a tile must not exceed it
  int registers;     // the vector register file
  // nullptr for a shape the set does not instantiate (blocks past kBf16NchwcMaxBlocks,
  // pixels past the register budget, stride other than 1 or 2).
  Bf16NchwcFn (*select)(int blocks, int pixels, int stride);

  int max_pixels(int blocks) const {
    int p = 0;
    while (p < kBf16NchwcMaxPixels && (p + 1) * blocks <= accumulators &&
           (p + 1) * blocks + blocks + 1 <= registers)
      ++p;
    return p;
  }
};

// The set the ISA path can run (AVX512-BF16 and above, on a CPU that has it), or nullptr.
const Bf16NchwcUkernels* bf16_nchwc_for(Isa isa);

}  // namespace dlas::ukernel

namespace dlas::ukernel {
#define X(name, isa, acc, regs) Bf16NchwcFn name(int blocks, int pixels, int stride);
#include "algo/microkernels/bf16-nchwc/bf16_nchwc.inc"
#undef X
}  // namespace dlas::ukernel

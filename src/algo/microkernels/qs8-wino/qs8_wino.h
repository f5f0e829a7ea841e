// int8 Winograd F(2x2, 3x3) on 8-channel blocks (nchw8c holding u8), exact in integers:
// the transforms of the blocked int8 `winograd` (src/algo/conv/winograd_qs8.cc), with the
// block's channels as the vector lanes. With B^T, G and A^T of Lavin & Gray's F(2,3) and
// G scaled by 2 so that every matrix is an integer one:
//   V = B^T d B of a 4x4 window d of u8 pixels: entries sums and differences of at most
//       four pixels, |V| <= 4 * 255 = 1020, held as int16;
//   U = (2G) g (2G)^T of s8 weights (the driver's): |U| <= 9 * 128 = 1152, int16;
//   M = sum over channels of U * V, the AVX2 qs8-nchwc tile on s16 pairs (vpmaddwd), int32;
//   Y = A^T M A = 4 * (the 3x3 conv of d), so Y >> 2 is the conv's exact sum.
// M and Y are computed modulo 2^32 (vpaddd wraps); Y's true value is 4x a sum the driver
// bounds below 2^29 in magnitude (C <= kQS8WinoMaxChannels), so the int32 is exact.
//
// input(x, x_rs, tiles, v, v_ps): tiles 2 pixels apart along a row of a padded image of
//   8-byte pixel blocks (x at the first tile's top-left pixel, rows x_rs bytes apart) ->
//   tile t's 16 points at v + t * 8 + xi * v_ps (int16, xi = 4 * row + column).
// output(a, p): tiles along an output row; tile t's points at a.m + t * 8 + xi * a.m_ps
//   (int32) -> Y >> 2, + init per lane, then the requantizing store of qconv.h (residual,
//   clamp, rounding, zero point; p as the qs8-nchwc store's) of its 2 x 2 pixels at
//   a.y + t * 16 (rows a.y_rs bytes apart; the residual a.r likewise), of which only a.rows
//   rows and, for the last tile, a.last_cols columns exist.
// One list: qs8_wino.inc.
#pragma once

#include <cstddef>
#include <cstdint>

#include "algo/microkernels/qs8-gemm/qs8_gemm.h"
#include "algo/microkernels/qs8-nchwc/qs8_nchwc.h"
#include "dlas/hw/isa.h"

namespace dlas::ukernel {

// Input channels the transforms keep exact: 4 * 9 * 255 * 128 * C < 2^31.
inline constexpr int64_t kQS8WinoMaxChannels = ((int64_t{1} << 31) - 1) / (4 * 9 * 255 * 128);

struct QS8WinoOutArgs {
  const int32_t* m = nullptr;
  size_t m_ps = 0;                // int32 between transform points
  size_t tiles = 1;               // tiles along the row
  size_t rows = 2;                // output rows the tiles cover (1 or 2)
  size_t last_cols = 2;           // output columns of the last tile (1 or 2)
  size_t y_rs = 0;                // bytes between output rows (of y and r)
  const int32_t* init = nullptr;  // [8] the block's init (bias - x_zp * sum(w))
  const float* mult = nullptr;    // [8]
  const uint8_t* r = nullptr;     // residual like y, or null
  uint8_t* y = nullptr;
};

using QS8WinoInputFn = void (*)(const uint8_t* x, size_t x_rs, size_t tiles, int16_t* v,
                                size_t v_ps);
using QS8WinoOutputFn = void (*)(const QS8WinoOutArgs& a, const QS8GemmParams& p);

struct QS8WinoUkernels {
  const char* name;  // "qs8_wino_x8__avx2"
  Isa isa;
  int lanes;  // channels per block (the blocked layout's)
  QS8WinoInputFn input;
  QS8WinoOutputFn output;
  QS8NchwcRawFn (*gemm)(int blocks, int pixels);  // M's tiles (qs8_nchwc.h, raw)
  int accumulators, registers;                    // the GEMM tiles' budget
  int max_pixels(int blocks) const { return qs8_tile_max_pixels(blocks, accumulators, registers); }
};

// The set for `lanes`-channel blocks the ISA path can run on this CPU, or nullptr.
const QS8WinoUkernels* qs8_wino_for(Isa isa, int lanes);

#define X(name, isa, lanes, gemm, acc, regs)                                               \
  void name##_input(const uint8_t* x, size_t x_rs, size_t tiles, int16_t* v, size_t v_ps); \
  void name##_output(const QS8WinoOutArgs& a, const QS8GemmParams& p);
#include "algo/microkernels/qs8-wino/qs8_wino.inc"
#undef X

}  // namespace dlas::ukernel

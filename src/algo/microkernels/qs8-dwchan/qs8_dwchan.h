// int8 depthwise conv kernels with channels as lanes, for planes too small to fill vectors
// with pixels (MobileNet's and EfficientNet's 14x14 .. 1x1 layers, where the per-plane
// kernels of qs8-dwconv spend more time on setup than on arithmetic). The activations stay
// NCHW: one call computes a band of output rows of `lanes` channels of one image.
//
// Staging. The band's input rows are transposed, 16 pixels at a time (a 16 x 16 byte
// transpose of the channel rows; the rows of a plane are one run of pixels), into a buffer S
// of float lanes: S[r][pc][lane] = x[c0 + lane][iy0 + r][pc - pad_l] (the byte's value),
// x_zp in the padding, where pc runs over the padded columns some tap reads.
// The zero point is folded into the bias (bias - x_zp * sum(w)): padding then contributes
// w * x_zp, which the fold cancels, as for any input pixel.
//
// Arithmetic. One tile is up to `tile` consecutive output pixels of the band (crossing rows:
// a 4x4 plane is one tile), one accumulator vector per pixel: acc = sum over taps of
// S[..] * w in float, one FMA per tap, then bias + (int32) acc. The float sum is exact:
// every product and partial sum is an integer of magnitude at most 64 taps x 255 x 128 <
// 2^24 (an FMA per tap where the integer route took vpmaddwd + vpaddd). The tile is
// requantized per pixel (the channel's multiplier per lane), transposed back 16 x 16 and
// stored as `channels` rows of `tile` bytes in the output planes; a residual is read the
// same way (transposed in).
//
// Blocked activations (QS8DwChanConfig::blocked) are staged and stored pixel by pixel, each
// pixel's block one vector of lanes: no transposes.
//
// Arithmetic after the sum is qs8_gemm.h's store (QS8GemmParams: init / mult / residual are
// per task here).
#pragma once

#include <cstddef>
#include <cstdint>

#include "algo/microkernels/qs8-gemm/qs8_gemm.h"
#include "dlas/hw/isa.h"

namespace dlas::ukernel {

// One problem's geometry, fixed at prepare (qs8_dwchan_config fills the derived fields).
struct QS8DwChanConfig {
  // Set by the caller.
  int64_t h = 0, w = 0, pad_t = 0, pad_l = 0, oh = 0, ow = 0;
  int kh = 0, kw = 0, sh = 1, sw = 1, dh = 1, dw = 1;
  bool x_signed = false;
  int32_t x_zp = 0;
  int lanes = 16;  // channels per call: the kernel's lanes
  // The activations are blocked (nchw8c / nchw16c with the block the kernel's lanes): a
  // task's x, y and residual point at its block's [h][w][lanes] pixels, read and written
  // without transposes.
  bool blocked = false;
  // Derived.
  int64_t wp = 0;    // staged columns per row: (ow - 1) * sw + (kw - 1) * dw + 1
  int64_t band = 0;  // output rows per call (the last band may be shorter)
  int64_t rows = 0;  // staged rows of a full band: (band - 1) * sh + (kh - 1) * dh + 1
};

// Fills the derived fields of c (the caller's fields set); `staging_bytes` bounds a band's
// staging buffer (the band is at least one output row).
void qs8_dwchan_config(QS8DwChanConfig& c, int64_t staging_bytes);
// int32 elements of one call's buffer: a header (whether S was filled, which staged rows hold
// only x_zp), then S. The caller zeroes it before the first call it serves, then passes it
// to every call of the same config: padding columns are written once.
int64_t qs8_dwchan_buffer_elems(const QS8DwChanConfig& c);
// The header's int32 elements (S starts there; a multiple of 16).
inline int64_t qs8_dwchan_header_elems(const QS8DwChanConfig& c) {
  return (c.rows + 1 + 15) / 16 * 16;
}

// One (image, block of `lanes` channels, band of output rows). Plane i of the block is at
// x + i * h * w (input) and y + i * oh * ow (output, residual); planes i >= channels are
// neither read nor written.
struct QS8DwChanTask {
  const void* x;         // the block's first input plane, u8 or s8 (c.x_signed)
  int channels;          // 1 .. lanes
  int64_t oy0, oy1;      // output rows of the band
  const float* w;        // [kh * kw][lanes]: the tap's weight per lane
  const int32_t* bias;   // [lanes]: bias - x_zp * (the channel's sum of weights)
  const float* m;        // [lanes] requant multipliers
  const void* residual;  // null, or the block's first residual plane (type p.r_signed)
  void* y;               // the block's first output plane
  int32_t* buf;          // qs8_dwchan_buffer_elems(c), zeroed before the first call
};

using QS8DwChanFn = void (*)(const QS8DwChanConfig& c, const QS8DwChanTask& t,
                             const QS8GemmParams& p);

struct QS8DwChanUkernel {
  const char* name;
  Isa isa;
  int lanes;  // channels per call
  int tile;   // output pixels per tile
  QS8DwChanFn fn;
};

// The kernel of the highest listed path <= isa the CPU runs (qs8-dwchan/qs8_dwchan.inc), or
// null when no path of the list is at or below isa (scalar).
const QS8DwChanUkernel* qs8_dwchan_for(Isa isa);

}  // namespace dlas::ukernel

// Declarations of every channels-as-lanes int8 depthwise kernel, derived from qs8_dwchan.inc.
namespace dlas::ukernel {
#define X(fn, isa, lanes, tile) \
  void fn(const QS8DwChanConfig& c, const QS8DwChanTask& t, const QS8GemmParams& p);
#include "algo/microkernels/qs8-dwchan/qs8_dwchan.inc"
#undef X
}  // namespace dlas::ukernel

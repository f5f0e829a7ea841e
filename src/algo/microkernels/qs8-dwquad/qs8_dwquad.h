// int8 depthwise kernels on 8-bit channel blocks (nchw16c u8), channels as lanes, three or
// four horizontal taps per vpdpbusd: multiplier 1, stride 1 or 2, no dilation, up to 8 taps
// per kernel row. A call computes a band of output rows of one 16-channel block.
//
// Staging. For each input row the band reads, a "quad row" Q[r][i] of 16 dwords, one per
// channel lane, holding the bytes of padded columns pc .. pc+3 (pc = i * sw: a stride-2 row
// stages every other window) of that channel (padding holds x_zp): the 64 bytes of four
// consecutive pixel blocks, transposed by a cross-lane dword permute and an in-lane byte
// shuffle. Rows outside the input are all x_zp.
//
// Arithmetic. Output pixel ox of row oy: acc = bias + sum over kernel rows ky and quads q of
// vpdpbusd(Q[row of oy, ky][ox + 4q / sw], w[ky][q]), w[ky][q] the lane's s8 weights of taps
// 4q .. 4q+3 of row ky (0 past kw). bias = bias - x_zp * sum(w) folds the padding's zero
// point, as in qs8_dwchan.h. The store is qs8_gemm.h's (QS8GemmParams; mult per lane), one
// 16-byte block per pixel.
#pragma once

#include <cstddef>
#include <cstdint>

#include "algo/microkernels/qs8-gemm/qs8_gemm.h"
#include "dlas/hw/isa.h"

namespace dlas::ukernel {

struct QS8DwQuadConfig {
  // Set by the caller.
  int64_t h = 0, w = 0, pad_t = 0, pad_l = 0, oh = 0, ow = 0;
  int kh = 0, kw = 0, sh = 1, sw = 1;
  int32_t x_zp = 0;
  // Derived (qs8_dwquad_config).
  int nq = 0;        // quads per kernel row: ceil(kw / 4)
  int64_t cols = 0;  // quad columns per staged row: (ow - 1) + 4 * (nq - 1) / sw + 1
  int64_t band = 0;  // output rows per call (the last band may be shorter)
  int64_t rows = 0;  // staged rows of a full band: (band - 1) * sh + kh
};

// Whether the kernels cover the geometry: stride 1 or 2, no dilation, kw <= 8, multiplier 1.
bool qs8_dwquad_covers(int64_t kw, int64_t sh, int64_t sw, int64_t dh, int64_t dw);
// Fills the derived fields; `staging_bytes` bounds a band's quad rows (at least one row).
void qs8_dwquad_config(QS8DwQuadConfig& c, int64_t staging_bytes);
// Bytes of one call's staging buffer (64-byte aligned by the caller).
int64_t qs8_dwquad_buffer_bytes(const QS8DwQuadConfig& c);

struct QS8DwQuadTask {
  const uint8_t* x;         // the block's [h][w][16] input pixels
  int64_t oy0, oy1;         // output rows of the band
  const int32_t* w;         // [kh][nq][16]: each lane's 4 s8 weights of the quad
  const int32_t* bias;      // [16]: bias - x_zp * (the channel's sum of weights)
  const float* m;           // [16] requantization multipliers
  const uint8_t* residual;  // null, or the block's [oh][ow][16] residual (type p.r_signed)
  uint8_t* y;               // the block's [oh][ow][16] output
  uint8_t* buf;             // qs8_dwquad_buffer_bytes(c), 64-byte aligned
};

using QS8DwQuadFn = void (*)(const QS8DwQuadConfig& c, const QS8DwQuadTask& t,
                             const QS8GemmParams& p);

struct QS8DwQuadUkernel {
  const char* name;
  Isa isa;
  QS8DwQuadFn fn;
};

// The kernel the path can run (AVX512-VNNI and above, on a CPU that has it), or nullptr.
const QS8DwQuadUkernel* qs8_dwquad_for(Isa isa);

}  // namespace dlas::ukernel

namespace dlas::ukernel {
#define X(fn, isa) \
  void fn(const QS8DwQuadConfig& c, const QS8DwQuadTask& t, const QS8GemmParams& p);
#include "algo/microkernels/qs8-dwquad/qs8_dwquad.inc"
#undef X
}  // namespace dlas::ukernel

// f32 depthwise convolution microkernels (NCHW, one input plane -> one output plane).
//
// The caller first copies the input rows a block of output rows needs into a per-thread
// buffer with fill(): zero padding made explicit, and each row split into `sw` phases
// (phase f holds padded columns f, f + sw, f + 2 sw, ...), so that for any stride the
// kernel reads output column x's tap kx with one contiguous (unaligned) vector load at
// phase (kx*dw) % sw, offset x + (kx*dw) / sw. Then rows() computes output rows from the
// buffer, accumulating in registers over a block of `R` output rows (each loaded input row
// vector feeds every output row of the block that uses it) times `U` vectors along W,
// and fuses bias, residual and clamp (None/Relu/Clip) into the store; other activations
// are applied afterwards by the caller with apply_epilogue().
//
// One list: f32-dwconv/f32_dwconv.inc. Bodies: f32-dwconv/f32_dwconv_template.h, one
// instantiation per ISA translation unit.
#pragma once

#include <cstddef>
#include <cstdint>

#include "dlas/hw/isa.h"

namespace dlas::ukernel {

struct F32DwconvParams {
  int64_t h = 0, w = 0;          // input plane
  int64_t pad_t = 0, pad_l = 0;  // top/left zero padding
  int64_t kh = 1, kw = 1, sh = 1, sw = 1, dh = 1, dw = 1;
  int64_t ow = 0;           // output row length
  int64_t phase_width = 0;  // floats per phase of a buffered row: >= round_up(ow, U*lanes)
                            // + (kw-1)*dw/sw, so full-vector loads never leave the row
  int64_t row_stride = 0;   // floats per buffered row: sw * phase_width
  float clamp_min = 0.f, clamp_max = 0.f;  // +-inf when no clamp
  // Channel-blocked layout only: output height and the padded block's rows and columns
  // (cb_h = (oh-1)*sh + (kh-1)*dh + 1, cb_w likewise: exactly the taps' reach).
  int64_t oh = 0, cb_h = 0, cb_w = 0;
};

// Register-block knob values: rows per block (R) and vectors per step along W (U).
inline constexpr int kF32DwconvRows[] = {1, 2, 4};
inline constexpr int kF32DwconvVecs[] = {1, 2};
inline constexpr int kF32DwconvNumRows = 3, kF32DwconvNumVecs = 2;

// Buffers padded rows [py0, py0 + rows) (padded-row coordinates: input row py - pad_t) of
// `plane` ([h][w]) into buf ([rows][row_stride]).
using F32DwconvFillFn = void (*)(const F32DwconvParams& p, const float* plane, int64_t py0,
                                 int64_t rows, float* buf);
// Output rows [0, rows) of one plane: out[r][x] = clamp(bias + res[r][x] +
// sum_{ky,kx} w[ky*kw+kx] * buf[r*sh + ky*dh][phase (kx*dw)%sw][x + (kx*dw)/sw]).
// res (like out, row stride ow) may be null.
using F32DwconvRowsFn = void (*)(const F32DwconvParams& p, int64_t rows, const float* buf,
                                 const float* w, float bias, const float* res, float* out);

// Channel-blocked layout (for small planes, where per-plane row setup dominates): a block
// of `lanes` channels is transposed into buf [cb_h][cb_w][lanes] (zero padding explicit,
// lanes past `valid` zero), so every tap is one full-vector FMA over the channels with a
// per-lane weight vector, whatever the plane width.
//
// cb_pack: planes of channels c0 + l (l < valid) at in + l * lane_stride -> buf.
using F32DwconvCbPackFn = void (*)(const F32DwconvParams& p, const float* in, int64_t lane_stride,
                                   int64_t valid, float* buf);
// cb_rows: tmp[oy*ow + ox][l] = bias[l] + sum_taps w[tap][l] * buf[oy*sh + ky*dh][ox*sw +
// kx*dw][l] for the whole output plane (no clamp: the residual comes first).
using F32DwconvCbRowsFn = void (*)(const F32DwconvParams& p, const float* buf, const float* w,
                                   const float* bias, float* tmp);
// cb_unpack: out[l * lane_stride + i] = clamp(tmp[i][l] + res[l * lane_stride + i]) for
// i < oh*ow, l < valid; res may be null.
using F32DwconvCbUnpackFn = void (*)(const F32DwconvParams& p, const float* tmp, int64_t valid,
                                     int64_t lane_stride, const float* res, float* out);

struct F32DwconvKernels {
  int lanes;
  F32DwconvFillFn fill;
  F32DwconvRowsFn rows[kF32DwconvNumRows][kF32DwconvNumVecs];  // [R index][U index]
  F32DwconvCbPackFn cb_pack;
  F32DwconvCbRowsFn cb_rows;
  F32DwconvCbUnpackFn cb_unpack;
};

// X: dispatched kernel sets, one per ISA. T: test-only instantiations (the 16-lane
// AVX-512 logic compiled for AVX2, so it runs on AVX2-only machines).
#define X(name, isa, lanes) extern const F32DwconvKernels name;
#define T(name, isa, lanes) extern const F32DwconvKernels name;
#include "algo/microkernels/f32-dwconv/f32_dwconv.inc"
#undef T
#undef X

// The kernel set of the highest listed ISA <= isa.
const F32DwconvKernels& f32_dwconv_for(Isa isa);

}  // namespace dlas::ukernel

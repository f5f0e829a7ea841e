// int8 depthwise conv kernels: one call computes every output plane of one (image, input
// channel), i.e. the channel multiplier's `mult` planes, from the uint8 / int8 input plane,
// row by row, with the requantization (+ clamp + residual) fused into the store.
//
// Tap pairs. The kernels multiply int16 pairs with vpmaddwd (lane = a0 * b0 + a1 * b1,
// exact: |x - x_zp| <= 255, |w| <= 128), two horizontal taps (2t, 2t + 1) of one kernel row
// per instruction, output pixels as lanes. Each input row iy is turned into "pair rows"
//   Q_u[j] = (xp[sw * j + u0], xp[sw * j + u0 + dw])        (two int16, one int32 lane)
// where xp is the row padded with zeros (pad_l on the left) holding x - x_zp, so padding
// contributes nothing and needs no zero-point correction. Tap pair t of output column ox is
//   shared (2 * dw % sw == 0: strides 1 and 2):  Q_0[ox + t * 2 * dw / sw]   (nsub = 1)
//   otherwise:                                   Q_t[ox], u0 = 2 * t * dw     (nsub = kwp)
// (the pair rows of one input row are adjacent, so both are "row + ox + t * tstep")
// and multiplies the weight pair (w[ky][2t], w[ky][2t + 1] or 0). With stride 2 and
// dilation 1 the pair row IS the padded row ((xp[2j], xp[2j + 1]) are adjacent), so those
// rows are written once and never shuffled ("direct"); stride 1 interleaves xp with itself
// shifted by dw. A 3x3 kernel is 6 vpmaddwd per L output pixels, 5x5 is 15.
//
// Rows. Output rows go in bands of `band` rows reading at most 16 input rows. Before a band,
// its new input rows are converted (all of them), then paired (all of them), so no load
// reads bytes stored a few instructions earlier (a store-forwarding stall); the pair rows
// live in a ring of `ring` slots (a power of two; input row iy in slot iy % ring), so a
// plane's working set is a few KiB (L1) however large the plane; rows above / below the
// input read one shared zero row. Vectors read up to round_up(ow, 32) pairs past a row's start,
// never past its slot.
//
// Arithmetic: acc = bias + sum_taps w * (x - x_zp) (int32, exact), then qs8_gemm.h's store
// (QS8GemmParams: init / mult / residual unused there, passed per plane here).
#pragma once

#include <cstddef>
#include <cstdint>

#include "algo/microkernels/qs8-gemm/qs8_gemm.h"
#include "dlas/hw/isa.h"

namespace dlas::ukernel {

// One problem's geometry, fixed at prepare (qs8_dwconv_config fills the derived fields).
struct QS8DwConfig {
  // Set by the caller.
  int64_t h = 0, w = 0, pad_t = 0, pad_l = 0, oh = 0, ow = 0;
  int kh = 0, kw = 0, sh = 1, sw = 1, dh = 1, dw = 1;
  int mult = 1;  // output channels per input channel
  bool x_signed = false;
  int32_t x_zp = 0;
  // Derived.
  int kwp = 0;          // tap pairs per kernel row: (kw + 1) / 2
  int nsub = 0;         // pair rows per input row: 1 (shared) or kwp
  int64_t wqp = 0;      // int32 pairs per pair row (a multiple of 32)
  int64_t slot = 0;     // int32 pairs per input row: nsub * wqp
  int64_t xp_len = 0;   // int16 elements of the padded row xp
  int64_t wcols = 0;    // input columns that land in xp (the rest are never read)
  int64_t band = 0;     // output rows per band
  int64_t xp_rows = 0;  // padded rows held (one per input row of a band; 0 when direct)
  int ring = 0;         // slots: a power of two >= the input rows of a band
  bool direct = false;  // sw == 2 && dw == 1: xp is the slot itself
  int64_t tstep = 0;    // pairs from tap pair t to t + 1: 2 * dw / sw (shared) or wqp
};

// Fills the derived fields of c (the caller's fields set).
void qs8_dwconv_config(QS8DwConfig& c);
// int16 elements of one task buffer: the zero row, the ring, xp. The caller zeroes it
// before the first task it serves; the kernels only write what they then read, and the
// padding they rely on stays zero.
int64_t qs8_dwconv_buffer_elems(const QS8DwConfig& c);

// One (image, input channel): planes j < mult of the outputs (and residuals) at
// y + j * oh * ow, weight pairs [mult][kh][kwp] as int32 (low half: the even tap).
struct QS8DwTask {
  const void* x;         // the input plane, h x w, u8 or s8 (c.x_signed)
  const int32_t* w;      // [mult][kh][kwp]
  const int32_t* bias;   // [mult]
  const float* m;        // [mult] requant multipliers
  const void* residual;  // null, or [mult][oh][ow] of the residual's type
  void* y;               // [mult][oh][ow]
  int16_t* buf;          // qs8_dwconv_buffer_elems(c), zeroed before the first task
};

using QS8DwFn = void (*)(const QS8DwConfig& c, const QS8DwTask& t, const QS8GemmParams& p);

// The kernel of the highest listed path <= isa the CPU runs (qs8-dwconv/qs8_dwconv.inc).
QS8DwFn qs8_dwconv_for(Isa isa);

}  // namespace dlas::ukernel

// Declarations of every int8 depthwise kernel, derived from qs8_dwconv.inc.
namespace dlas::ukernel {
#define X(fn, isa, lanes) void fn(const QS8DwConfig& c, const QS8DwTask& t, const QS8GemmParams& p);
#include "algo/microkernels/qs8-dwconv/qs8_dwconv.inc"
#undef X
}  // namespace dlas::ukernel

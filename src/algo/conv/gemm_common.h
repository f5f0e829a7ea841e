// Pieces the GEMM-based conv algorithms (gemm, direct) share: the microkernel
// candidates of an ISA, the implicit-GEMM tap table, weight packing into MR panels, workspace
// carving, and splitting work into exactly `threads` chunks (parallel_for gives no thread id, so
// each chunk index owns one scratch slot).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "algo/microkernels/f32-gemm/f32_gemm.h"
#include "dlas/algo/conv.h"
#include "dlas/core/aligned_vector.h"

namespace dlas::conv_detail {

// Conv candidates on `isa`: every kernel runnable there except the 1xN GEMV kernels
// (one output channel per call wastes the A broadcast; they serve fully-connected layers).
std::vector<const ukernel::F32GemmUkernel*> conv_gemm_ukernels(Isa isa);

// Weights [K][C/g][KH][KW] -> [g][Kg/MR panels][R][MR] (R = C/g * KH * KW, rows past Kg zero),
// each panel packed by uk.pack: the A operand of every microkernel call, k-range [r0, r1) at
// panel + r0 * MR.
AlignedVector<float> pack_conv_weights(const ConvProblem& p, const float* w,
                                       const ukernel::F32GemmUkernel& uk);

inline int64_t div_up(int64_t a, int64_t b) { return (a + b - 1) / b; }
inline int64_t round_up(int64_t a, int64_t b) { return div_up(a, b) * b; }
// Floats per scratch slot, rounded so every slot stays 64-byte aligned.
inline int64_t slot_floats(int64_t floats) { return round_up(floats, 16); }

// [begin, end) of chunk t of n items split into `chunks` nearly equal parts.
inline void chunk_range(int64_t n, int64_t chunks, int64_t t, int64_t* begin, int64_t* end) {
  *begin = n * t / chunks;
  *end = n * (t + 1) / chunks;
}

// One reduction row r = (c, ky, kx) of a group in the implicit-GEMM (im2col) formulation:
// where its input pixels are and which output columns read inside the image. Every gemm
// conv (f32, int8, 16-bit) packs its B panels by walking these.
struct ConvTap {
  int64_t chan_off;      // c * H * W
  int64_t dy, dx;        // ky * dil_h - pad_t, kx * dil_w - pad_l
  int64_t ox_lo, ox_hi;  // output columns whose input column ox * sw + dx is inside [0, W)
};
// The C/g * KH * KW taps of p, in reduction order.
std::vector<ConvTap> conv_taps(const ConvProblem& p);

// A run of output pixels on one row: (oy, ox0..ox1) go to panel columns at..
struct PixelSegment {
  int64_t oy, ox0, ox1, at;
};
// Splits the output pixels [q0, q1) of a plane `ow` wide into row segments (at most
// q1 - q0 + 1 of them, written to segs); returns how many.
inline int split_pixel_rows(int64_t q0, int64_t q1, int64_t ow, PixelSegment* segs) {
  int n = 0;
  for (int64_t q = q0; q < q1;) {
    const int64_t oy = q / ow, ox0 = q % ow;
    const int64_t ox1 = ox0 + (q1 - q) < ow ? ox0 + (q1 - q) : ow;
    segs[n++] = {oy, ox0, ox1, q - q0};
    q += ox1 - ox0;
  }
  return n;
}

// One row of the im2col matrix: tap `tap` over the output pixels of `segs` (a block split by
// split_pixel_rows, once for all its rows) of `plane` (the image group's first channel; the
// tap's channel at plane + tap.chan_off), into out[0, block width). Inside pixels go through
// copy(src, stride, count, dst), the padding through pad(dst, count); both ends of a tap's
// valid range are clamped into each row segment, so a block ending early in an output row
// never pads past its own columns.
template <class T, class Copy, class Pad>
void im2col_row(const ConvProblem& p, const ConvTap& tap, const T* plane, const PixelSegment* segs,
                int nsegs, T* out, Copy copy, Pad pad) {
  const int64_t sw = p.stride_w;
  const T* chan = plane + tap.chan_off;
  for (int si = 0; si < nsegs; ++si) {
    const PixelSegment& sg = segs[si];
    const int64_t iy = sg.oy * p.stride_h + tap.dy;
    T* o = out + sg.at - sg.ox0;  // o[ox] is pixel (oy, ox)
    if (iy < 0 || iy >= p.h) {
      pad(o + sg.ox0, sg.ox1 - sg.ox0);
      continue;
    }
    const T* src = chan + iy * p.w + tap.dx;
    const int64_t lo = tap.ox_lo < sg.ox0 ? sg.ox0 : tap.ox_lo > sg.ox1 ? sg.ox1 : tap.ox_lo;
    int64_t hi = tap.ox_hi < sg.ox1 ? tap.ox_hi : sg.ox1;
    if (hi < lo) hi = lo;
    if (lo > sg.ox0) pad(o + sg.ox0, lo - sg.ox0);
    if (hi > lo) copy(src + lo * sw, sw, hi - lo, o + lo);
    if (hi < sg.ox1) pad(o + hi, sg.ox1 - hi);
  }
}

// The row segments of output pixels [q0, q1) in a per-thread buffer that only grows (no
// allocation per block once warm); valid until this thread's next call.
inline const PixelSegment* block_segments(int64_t q0, int64_t q1, int64_t ow, int* nsegs) {
  static thread_local std::vector<PixelSegment> segs;
  if (segs.size() < static_cast<size_t>(q1 - q0 + 1)) segs.resize(static_cast<size_t>(q1 - q0 + 1));
  *nsegs = split_pixel_rows(q0, q1, ow, segs.data());
  return segs.data();
}

// "ukernel" knob values: indices into conv_gemm_ukernels(isa).
KnobSpec ukernel_knob(Isa isa);
// The kernel the knob selects (validated by the caller's KnobSpace::validate).
const ukernel::F32GemmUkernel& ukernel_from_knob(Isa isa, int64_t index);

}  // namespace dlas::conv_detail

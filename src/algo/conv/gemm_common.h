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

// "ukernel" knob values: indices into conv_gemm_ukernels(isa).
KnobSpec ukernel_knob(Isa isa);
// The kernel the knob selects (validated by the caller's KnobSpace::validate).
const ukernel::F32GemmUkernel& ukernel_from_knob(Isa isa, int64_t index);

}  // namespace dlas::conv_detail

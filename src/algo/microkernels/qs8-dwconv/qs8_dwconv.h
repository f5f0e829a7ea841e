// int8 depthwise conv kernels: one output plane (one channel of one image) per call, from
// the channel's input plane prepared by src/algo/conv/depthwise_qconv.cc as int16
// (x - x.zero_point; padding 0, so no zero-point correction), split into stride phases so
// the output pixels of a row are contiguous lanes for every tap:
//   padded element (iy, ix) at x[((ix % sw) * hp + iy) * wq + ix / sw]
// and a tap (ky, kx) of output (oy, ox) reads (oy * sh + ky * dh, ox * sw + kx * dw).
// acc = bias + sum_taps w * x in int32 (|x| <= 255, |w| <= 128: products fit int16 x int16
// -> int32, sums exact for any depthwise kernel size), then the requantizing store of
// qs8_gemm.h (QS8GemmParams: its init / mult fields unused, passed per call).
// Rows are read L lanes at a time past ow: wq covers round_up(ow, 16) + the tap offset.
#pragma once

#include <cstddef>
#include <cstdint>

#include "algo/microkernels/qs8-gemm/qs8_gemm.h"
#include "dlas/hw/isa.h"

namespace dlas::ukernel {

struct QS8DwPlane {
  const int16_t* x;
  int64_t hp, wq;
  const int32_t* w;  // [kh][kw]
  int kh, kw, sh, sw, dh, dw;
  int64_t oh, ow;
};

using QS8DwFn = void (*)(const QS8DwPlane& d, int32_t bias, float mult, const void* residual,
                         void* y, const QS8GemmParams& p);

// The kernel of the highest listed path <= isa the CPU runs (qs8-dwconv/qs8_dwconv.inc).
QS8DwFn qs8_dwconv_for(Isa isa);

}  // namespace dlas::ukernel

// Declarations of every int8 depthwise kernel, derived from qs8_dwconv.inc.
namespace dlas::ukernel {
#define X(fn, isa, lanes)                                                               \
  void fn(const QS8DwPlane& d, int32_t bias, float mult, const void* residual, void* y, \
          const QS8GemmParams& p);
#include "algo/microkernels/qs8-dwconv/qs8_dwconv.inc"
#undef X
}  // namespace dlas::ukernel

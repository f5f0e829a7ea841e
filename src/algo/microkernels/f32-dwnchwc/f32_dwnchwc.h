// f32 depthwise convolution microkernels on blocked activations (NCHWc,
// dlas/algo/layout.h): one tile of P output pixels along a row of one channel block, each
// pixel's `lanes` channels in one vector register. Per kernel tap one weight vector (the
// block's per-channel weights) is loaded and FMA'd with each pixel's input vector:
//
//   y[p][l] = act(bias[l] + r[p][l] +
//       sum_{i < kh, j < kw} x[i * x_khs + j * x_kws + p * x_ps + l] * w[i * w_khs + j * lanes +
//       l])
//
// x points at the first pixel's first counted tap and w at that tap's weights; the caller
// counts only kernel rows inside the input (kh may be smaller than the kernel, 0 included),
// and for kw = 0 kernels only columns inside it; kw > 0 kernels skip the window columns
// outside [q_lo, q_hi) instead, so no padding is ever read. y and r point at the tile's first
// pixel, pixels `lanes` apart. The clamp (none/relu/clip) is fused; the caller applies other
// activations to the stored row. One list: f32-dwnchwc/f32_dwnchwc.inc; bodies:
// f32_dwnchwc_template.h, one TU per ISA.
#pragma once

#include <cstddef>
#include <vector>

#include "dlas/hw/isa.h"

namespace dlas::ukernel {

// R: the residual's stored element (float here; uint16_t for bf16 storage, bf16-dwnchwc).
template <class R>
struct DwNchwcArgs {
  size_t kh = 1, kw = 1;  // taps counted along H and W
  size_t x_khs = 0;       // floats between counted kernel rows (dil_h * w * lanes)
  size_t x_kws = 0;       // floats between kernel columns (dil_w * lanes)
  size_t x_ps = 0;        // floats between output pixels' inputs (stride_w * lanes)
  size_t w_khs = 0;       // floats between weight rows (kernel width * lanes)
  // kw > 0 kernels: the tile's window columns q (input column first + q, the window being
  // the (P - 1) * stride + kw columns its pixels read) inside the input are [q_lo, q_hi);
  // the others are zero padding, never read. x then points at window column q_lo (inside the
  // row). The defaults mean every column is inside.
  int q_lo = 0, q_hi = 1 << 30;
  const float* bias = nullptr;  // [lanes]
  const R* r = nullptr;         // residual like y, or null
  float lo = 0.f, hi = 0.f;     // clamp bounds (+-inf when none)
};
using F32DwNchwcArgs = DwNchwcArgs<float>;

using F32DwNchwcFn = void (*)(const F32DwNchwcArgs& a, const float* x, const float* w, float* y);

// Most output pixels a tile holds.
inline constexpr int kDwNchwcMaxPixels = 16;

// One ISA's kernel set.
struct F32DwNchwcUkernels {
  const char* name;  // "f32_dwnchwc_x16__avx512"
  Isa isa;
  int lanes;
  int accumulators;  // pixels of a tile must not exceed it
  // The kernel of `pixels` pixels for stride_w (1 and 2 are constants, others read x_ps),
  // or nullptr past max_pixels(). kw > 0 (3 or 5): for tiles whose taps along W are kw
  // undilated columns (unrolled, taps then pixels), padding columns
  // skipped by q_lo / q_hi; 0: reads a.kw and a.x_kws.
  F32DwNchwcFn (*select)(int pixels, int stride, int kw);

  int max_pixels() const {
    return accumulators < kDwNchwcMaxPixels ? accumulators : kDwNchwcMaxPixels;
  }
};

// The production sets (the X rows of the list).
const std::vector<F32DwNchwcUkernels>& f32_dwnchwc_ukernels();
// The test-only sets (the T rows): run by the tests, never selected.
const std::vector<F32DwNchwcUkernels>& f32_dwnchwc_test_only_ukernels();
// The production set of `lanes` lanes the ISA path can run, or nullptr.
const F32DwNchwcUkernels* f32_dwnchwc_for(Isa isa, int lanes);

}  // namespace dlas::ukernel

// Declarations of every kernel set, derived from f32_dwnchwc.inc.
namespace dlas::ukernel {
#define X(name, isa, lanes, acc) F32DwNchwcFn name(int pixels, int stride, int kw);
#define T(name, isa, lanes, acc) X(name, isa, lanes, acc)
#include "algo/microkernels/f32-dwnchwc/f32_dwnchwc.inc"
#undef T
#undef X
}  // namespace dlas::ukernel

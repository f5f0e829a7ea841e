// Pooling plane kernels written once as plain loops that GCC vectorizes with the flags of
// the including translation unit (f32_pool__<isa>.cc). Internal linkage (anonymous
// namespace): each ISA TU has its own copy. No std:: helpers on floats (ODR hazard).
//
// Every window is handled as a sum of per-tap passes: for tap (ky, kx) the output columns
// whose tap lands inside the input form one contiguous range [lo, hi), computed up front,
// so the inner loop has no bounds checks and no edge cases, and runs along a contiguous
// output row (stride-1 loads for stride 1, strided loads GCC vectorizes for stride 2).
#pragma once

#include <cstdint>

#include "algo/microkernels/f32-pool/f32_pool.h"

namespace dlas::ukernel {
namespace {

// Output positions o in [0, out) with lo_in <= o*s + off < hi_in, as [first, last).
inline void pool_range(int64_t out, int64_t s, int64_t off, int64_t lo_in, int64_t hi_in,
                       int64_t& first, int64_t& last) {
  // o*s + off >= lo_in  <=>  o >= ceil((lo_in - off) / s)
  const int64_t a = lo_in - off, b = hi_in - off;  // o*s in [a, b)
  first = a <= 0 ? 0 : (a + s - 1) / s;
  last = b <= 0 ? 0 : (b + s - 1) / s;
  if (last > out) last = out;
  if (first > last) first = last;
}

// Taps k < kn with lo_in <= o*s + k*d - pad < hi_in.
inline int64_t pool_taps(int64_t o, int64_t s, int64_t k, int64_t d, int64_t pad, int64_t lo_in,
                         int64_t hi_in) {
  int64_t n = 0;
  for (int64_t t = 0; t < k; ++t) {
    const int64_t i = o * s + t * d - pad;
    n += i >= lo_in && i < hi_in;
  }
  return n;
}

// Output row oy of a plane: yr = init, then combine(yr[ox], tap) over every window tap
// inside the input, one contiguous column range per tap (the shared body of max and avg).
template <class Combine>
inline void pool_row(const PoolProblem& p, const float* __restrict x, int64_t oy, float init,
                     float* __restrict yr, Combine combine) {
  const int64_t sw = p.stride_w;
  for (int64_t ox = 0; ox < p.ow; ++ox) yr[ox] = init;
  for (int64_t ky = 0; ky < p.kh; ++ky) {
    const int64_t iy = oy * p.stride_h + ky * p.dil_h - p.pad_t;
    if (iy < 0 || iy >= p.h) continue;
    for (int64_t kx = 0; kx < p.kw; ++kx) {
      const int64_t off = kx * p.dil_w - p.pad_l;
      int64_t lo, hi;
      pool_range(p.ow, sw, off, 0, p.w, lo, hi);
      const float* __restrict xr = x + iy * p.w + off;
      // Stride 1 and 2 kept separate so GCC vectorizes them.
      if (sw == 1) {
        for (int64_t ox = lo; ox < hi; ++ox) yr[ox] = combine(yr[ox], xr[ox]);
      } else if (sw == 2) {
        for (int64_t ox = lo; ox < hi; ++ox) yr[ox] = combine(yr[ox], xr[2 * ox]);
      } else {
        for (int64_t ox = lo; ox < hi; ++ox) yr[ox] = combine(yr[ox], xr[ox * sw]);
      }
    }
  }
}

void max_plane(const PoolProblem& p, const float* __restrict x, float* __restrict y) {
  // v != v: a NaN tap wins, as in the reference kernel.
  for (int64_t oy = 0; oy < p.oh; ++oy)
    pool_row(p, x, oy, -__builtin_inff(), y + oy * p.ow,
             [](float b, float v) { return (v > b || v != v) ? v : b; });
}

void avg_plane(const PoolProblem& p, bool include_pad, const float* __restrict x,
               float* __restrict y) {
  const int64_t sw = p.stride_w;
  // Bounds that count toward the divisor.
  const int64_t ylo = include_pad ? -p.pad_t : 0, yhi = include_pad ? p.h + p.pad_b : p.h;
  const int64_t xlo = include_pad ? -p.pad_l : 0, xhi = include_pad ? p.w + p.pad_r : p.w;
  // Columns whose every tap counts: one divisor for the whole run.
  int64_t full_lo = 0, full_hi = p.ow;
  for (int64_t kx = 0; kx < p.kw; ++kx) {
    int64_t lo, hi;
    pool_range(p.ow, sw, kx * p.dil_w - p.pad_l, xlo, xhi, lo, hi);
    if (lo > full_lo) full_lo = lo;
    if (hi < full_hi) full_hi = hi;
  }
  if (full_hi < full_lo) full_hi = full_lo;
  for (int64_t oy = 0; oy < p.oh; ++oy) {
    float* __restrict yr = y + oy * p.ow;
    pool_row(p, x, oy, 0.f, yr, [](float b, float v) { return b + v; });
    const int64_t ch = pool_taps(oy, p.stride_h, p.kh, p.dil_h, p.pad_t, ylo, yhi);
    for (int64_t ox = 0; ox < p.ow; ++ox) {
      if (ox == full_lo && ch > 0) {
        // Divide (not multiply by a reciprocal) so results match the reference exactly.
        const float cnt = static_cast<float>(ch * p.kw);
        for (; ox < full_hi; ++ox) yr[ox] = yr[ox] / cnt;
        if (ox == p.ow) break;
      }
      const int64_t cnt = ch * pool_taps(ox, sw, p.kw, p.dil_w, p.pad_l, xlo, xhi);
      yr[ox] = cnt > 0 ? yr[ox] / static_cast<float>(cnt) : 0.f;
    }
  }
}

void gavg_planes(int64_t planes, int64_t hw, const float* __restrict x, float* __restrict y) {
  // 16 independent partial sums: a plain elementwise loop GCC vectorizes without
  // reassociating (one or two vector accumulators), then a fixed-order reduction.
  constexpr int kLanes = 16;
  for (int64_t q = 0; q < planes; ++q) {
    const float* __restrict xp = x + q * hw;
    float acc[kLanes] = {};
    int64_t i = 0;
    for (; i + kLanes <= hw; i += kLanes)
      for (int j = 0; j < kLanes; ++j) acc[j] += xp[i + j];
    for (int j = 0; i < hw; ++i, ++j) acc[j] += xp[i];
    float s = 0.f;
    for (int j = 0; j < kLanes; ++j) s += acc[j];
    y[q] = hw > 0 ? s / static_cast<float>(hw) : 0.f;
  }
}

constexpr F32PoolKernels make_pool_kernels() {
  return F32PoolKernels{&max_plane, &avg_plane, &gavg_planes};
}

}  // namespace
}  // namespace dlas::ukernel

// The blocked-layout pooling kernels, written once over a GCC vector type V of W lanes (one
// vector per pixel: a block's channels). Per output pixel the window's taps inside the
// input form one range of kernel rows and one of kernel columns (computed, never tested per
// tap), visited in the NCHW kernels' order so the sums match them. Anonymous namespace:
// each ISA TU keeps its own copy.
#pragma once

#include <cstdint>

#include "algo/microkernels/f32-poolnchwc/f32_poolnchwc.h"

namespace {

using dlas::PoolProblem;

// Taps t < k with lo_in <= o*s + t*d - pad < hi_in, as [first, last).
inline void poolnchwc_taps(int64_t o, int64_t s, int64_t d, int64_t pad, int64_t k, int64_t lo_in,
                           int64_t hi_in, int64_t& first, int64_t& last) {
  const int64_t a = lo_in + pad - o * s, b = hi_in + pad - o * s;  // t*d in [a, b)
  first = a <= 0 ? 0 : (a + d - 1) / d;
  last = b <= 0 ? 0 : (b + d - 1) / d;
  if (last > k) last = k;
  if (first > last) first = last;
}

template <class V, int W>
void poolnchwc_max(const PoolProblem& p, const float* x, float* y, int64_t oy0, int64_t oy1) {
  const V ninf = -__builtin_inff() - V{};
  for (int64_t oy = oy0; oy < oy1; ++oy) {
    int64_t ky0, ky1;
    poolnchwc_taps(oy, p.stride_h, p.dil_h, p.pad_t, p.kh, 0, p.h, ky0, ky1);
    for (int64_t ox = 0; ox < p.ow; ++ox) {
      int64_t kx0, kx1;
      poolnchwc_taps(ox, p.stride_w, p.dil_w, p.pad_l, p.kw, 0, p.w, kx0, kx1);
      V m = ninf;
      for (int64_t ky = ky0; ky < ky1; ++ky) {
        const float* xr = x + ((oy * p.stride_h + ky * p.dil_h - p.pad_t) * p.w) * W;
        for (int64_t kx = kx0; kx < kx1; ++kx) {
          V v;
          __builtin_memcpy(&v, xr + (ox * p.stride_w + kx * p.dil_w - p.pad_l) * W, sizeof(V));
          // v != v: a NaN tap wins, as in the NCHW kernels.
          m = (v > m) | (v != v) ? v : m;
        }
      }
      __builtin_memcpy(y + (oy * p.ow + ox) * W, &m, sizeof(V));
    }
  }
}

template <class V, int W>
void poolnchwc_avg(const PoolProblem& p, bool include_pad, const float* x, float* y, int64_t oy0,
                   int64_t oy1) {
  for (int64_t oy = oy0; oy < oy1; ++oy) {
    int64_t ky0, ky1, cy0, cy1;
    poolnchwc_taps(oy, p.stride_h, p.dil_h, p.pad_t, p.kh, 0, p.h, ky0, ky1);
    if (include_pad)
      poolnchwc_taps(oy, p.stride_h, p.dil_h, p.pad_t, p.kh, -p.pad_t, p.h + p.pad_b, cy0, cy1);
    else
      cy0 = ky0, cy1 = ky1;
    for (int64_t ox = 0; ox < p.ow; ++ox) {
      int64_t kx0, kx1, cx0, cx1;
      poolnchwc_taps(ox, p.stride_w, p.dil_w, p.pad_l, p.kw, 0, p.w, kx0, kx1);
      if (include_pad)
        poolnchwc_taps(ox, p.stride_w, p.dil_w, p.pad_l, p.kw, -p.pad_l, p.w + p.pad_r, cx0, cx1);
      else
        cx0 = kx0, cx1 = kx1;
      V s = V{};
      for (int64_t ky = ky0; ky < ky1; ++ky) {
        const float* xr = x + ((oy * p.stride_h + ky * p.dil_h - p.pad_t) * p.w) * W;
        for (int64_t kx = kx0; kx < kx1; ++kx) {
          V v;
          __builtin_memcpy(&v, xr + (ox * p.stride_w + kx * p.dil_w - p.pad_l) * W, sizeof(V));
          s += v;
        }
      }
      const int64_t cnt = (cy1 - cy0) * (cx1 - cx0);
      // Divide (not multiply by a reciprocal) so results match the NCHW kernels exactly.
      const V o = cnt > 0 ? s / static_cast<float>(cnt) : V{};
      __builtin_memcpy(y + (oy * p.ow + ox) * W, &o, sizeof(V));
    }
  }
}

template <class V, int W>
void poolnchwc_gavg(int64_t planes, int64_t hw, const float* x, float* y) {
  for (int64_t q = 0; q < planes; ++q) {
    const float* xp = x + q * hw * W;
    // Two partial sums: independent adds in flight, then one fixed-order combine.
    V s0 = V{}, s1 = V{};
    int64_t i = 0;
    for (; i + 2 <= hw; i += 2) {
      V a, b;
      __builtin_memcpy(&a, xp + i * W, sizeof(V));
      __builtin_memcpy(&b, xp + (i + 1) * W, sizeof(V));
      s0 += a, s1 += b;
    }
    if (i < hw) {
      V a;
      __builtin_memcpy(&a, xp + i * W, sizeof(V));
      s0 += a;
    }
    const V o = (s0 + s1) / static_cast<float>(hw);
    __builtin_memcpy(y + q * W, &o, sizeof(V));
  }
}

template <class V, int W>
constexpr dlas::ukernel::F32PoolNchwcUkernels make_poolnchwc(const char* name, dlas::Isa isa) {
  return {name, isa, W, &poolnchwc_max<V, W>, &poolnchwc_avg<V, W>, &poolnchwc_gavg<V, W>};
}

}  // namespace

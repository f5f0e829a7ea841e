// The blocked-layout depthwise tile kernel, written once over a GCC vector type V of W
// lanes; each ISA TU instantiates it for every pixel count. Anonymous namespace: each TU
// keeps its own copy, so the linker can never hand the AVX2 path an AVX-512 instantiation.
#pragma once

#include <cstddef>
#include <utility>

#include "algo/microkernels/f32-dwnchwc/f32_dwnchwc.h"

namespace {

using dlas::ukernel::F32DwNchwcArgs;
using dlas::ukernel::F32DwNchwcFn;

// P accumulators, one weight vector and one input vector live in registers; S is the
// stride along W (0: read from the arguments). KW > 0: the tile's taps along W are KW
// undilated columns, constants for the unrolled loops; a tile at the row's edges reads its
// window columns outside [q_lo, q_hi) (the padding) as zeros and keeps all P accumulators.
template <class V, int W, int P, int S, int KW, bool EDGE>
void dwnchwc_body(const F32DwNchwcArgs& a, const float* x, const float* w, float* y) {
  V acc[P];
  {
    V b;
    __builtin_memcpy(&b, a.bias, sizeof(V));
    for (int p = 0; p < P; ++p) acc[p] = b;
  }
  const size_t ps = S ? static_cast<size_t>(S * W) : a.x_ps;
  for (size_t i = 0; i < a.kh; ++i) {
    const float* xr = x + i * a.x_khs;
    const float* wr = w + i * a.w_khs;
    if constexpr (KW > 0) {
      // Tap j of pixel p reads window column p * S + j. Loops over taps, then pixels
      // (each load folds into its FMA): indexing the accumulators by column, q - j, kept
      // them in memory (GCC's scalar replacement runs before the unrolling that would
      // make those indices constant; 0.4 FMA/cycle on Zen 3). An edge tile (x at column
      // q_lo) first copies its row window into `win`, zeros outside [q_lo, q_hi) (the
      // padding).
      constexpr int kCols = (P - 1) * S + KW;
      alignas(64) float win[EDGE ? kCols * W : 1];
      const float* src = xr;
      if constexpr (EDGE) {
        for (int q = 0; q < kCols; ++q) {
          V v = V{};
          if (q >= a.q_lo && q < a.q_hi) __builtin_memcpy(&v, xr + (q - a.q_lo) * W, sizeof(V));
          __builtin_memcpy(win + q * W, &v, sizeof(V));
        }
        src = win;
      }
      for (int j = 0; j < KW; ++j) {
        V wv;
        __builtin_memcpy(&wv, wr + j * W, sizeof(V));
        for (int p = 0; p < P; ++p) {
          V xv;
          __builtin_memcpy(&xv, src + (p * S + j) * W, sizeof(V));
          acc[p] += xv * wv;
        }
      }
    } else {
      for (size_t j = 0; j < a.kw; ++j) {
        const float* xt = xr + j * a.x_kws;
        V wv;
        __builtin_memcpy(&wv, wr + j * W, sizeof(V));
        for (int p = 0; p < P; ++p) {
          V xv;
          __builtin_memcpy(&xv, xt + p * ps, sizeof(V));
          acc[p] += xv * wv;
        }
      }
    }
  }
  const V lo = a.lo - V{}, hi = a.hi - V{};
  for (int p = 0; p < P; ++p) {
    V o = acc[p];
    if (a.r) {
      V r;
      __builtin_memcpy(&r, a.r + p * W, sizeof(V));
      o += r;
    }
    o = o < lo ? lo : o;
    o = o > hi ? hi : o;
    __builtin_memcpy(y + p * W, &o, sizeof(V));
  }
}

// An unrolled tile (KW > 0) whose window reaches into the padding runs the body that
// tests its columns; interior tiles run the body without the tests.
template <class V, int W, int P, int S, int KW>
void dwnchwc_tile(const F32DwNchwcArgs& a, const float* x, const float* w, float* y) {
  if constexpr (KW > 0)
    if (a.q_lo > 0 || a.q_hi < (P - 1) * S + KW)
      return dwnchwc_body<V, W, P, S, KW, true>(a, x, w, y);
  dwnchwc_body<V, W, P, S, KW, false>(a, x, w, y);
}

template <class V, int W, int S, int KW, int... Ps>
F32DwNchwcFn dwnchwc_pick(int pixels, int max_pixels, std::integer_sequence<int, Ps...>) {
  constexpr F32DwNchwcFn fns[] = {&dwnchwc_tile<V, W, Ps + 1, S, KW>...};
  return pixels >= 1 && pixels <= max_pixels && pixels <= static_cast<int>(sizeof...(Ps))
             ? fns[pixels - 1]
             : nullptr;
}

template <class V, int W, int ACC>
F32DwNchwcFn dwnchwc_select(int pixels, int stride, int kw) {
  constexpr int kMax =
      ACC < dlas::ukernel::kDwNchwcMaxPixels ? ACC : dlas::ukernel::kDwNchwcMaxPixels;
  using Seq = std::make_integer_sequence<int, kMax>;
  if (stride == 1 && kw == 3) return dwnchwc_pick<V, W, 1, 3>(pixels, kMax, Seq{});
  if (stride == 2 && kw == 3) return dwnchwc_pick<V, W, 2, 3>(pixels, kMax, Seq{});
  if (stride == 1 && kw == 5) return dwnchwc_pick<V, W, 1, 5>(pixels, kMax, Seq{});
  if (stride == 2 && kw == 5) return dwnchwc_pick<V, W, 2, 5>(pixels, kMax, Seq{});
  if (stride == 1) return dwnchwc_pick<V, W, 1, 0>(pixels, kMax, Seq{});
  if (stride == 2) return dwnchwc_pick<V, W, 2, 0>(pixels, kMax, Seq{});
  return dwnchwc_pick<V, W, 0, 0>(pixels, kMax, Seq{});
}

}  // namespace

// The blocked-layout direct tile kernel, written once over a GCC vector type V of W lanes;
// each ISA TU instantiates it for every tile shape. Anonymous namespace: each TU keeps its
// own copy, so the linker can never hand the AVX2 path an AVX-512 instantiation.
#pragma once

#include <cstddef>
#include <utility>

#include "algo/microkernels/f32-nchwc/f32_nchwc.h"

namespace {

using dlas::ukernel::F32NchwcArgs;
using dlas::ukernel::F32NchwcFn;

// The first NC of the IB lane steps of one tap (NC = IB: all): per step NV weight vectors,
// each pixel broadcast into them, fully unrolled. (Unrolled by 1, 2 or 4, GCC spilled
// accumulators of the 12-accumulator tiles on AVX2: a third of the FLOP/s.) R rows of P
// pixels, xrs floats apart (R = 1: one row, xrs unused).
template <class V, int W, int NV, int P, int IB, int S, int R, int NC = IB>
[[gnu::always_inline]] inline void nchwc_lane_steps(V (&acc)[R * P][NV], const float* xt,
                                                    size_t xrs, const float* wc) {
#pragma GCC unroll 16
  for (int c = 0; c < NC; ++c) {
    V wv[NV];
    for (int v = 0; v < NV; ++v) __builtin_memcpy(&wv[v], wc + (c * NV + v) * W, sizeof(V));
    for (int q = 0; q < R; ++q) {
      const float* xq = xt + q * xrs;
      // Unrolled whatever P: GCC unrolls loops of at most 16 iterations completely by
      // itself, and left the 20- and 24-pixel tiles' accumulators in memory (1 block x 24
      // pixels ran a 32->32 32x32 1x1 conv in 12.0 us against 5.6 at 16; AMD EPYC Zen 5, 2
      // threads).
#pragma GCC unroll 32
      for (int p = 0; p < P; ++p) {
        const V xv = xq[p * S * IB + c] - V{};  // broadcast (x - 0 folds; 0 + x does not)
        for (int v = 0; v < NV; ++v) acc[q * P + p][v] += xv * wv[v];
      }
    }
  }
}

// The cache lines of N floats of weights at w, prefetched: one tap's weights, a.w_pf floats
// ahead of those the tap reads (on planes whose weights stream from memory the hardware
// prefetchers alone left the FMAs waiting on them).
template <int N>
[[gnu::always_inline]] inline void nchwc_prefetch(const float* w) {
#pragma GCC unroll 64
  for (int l = 0; l < (N + 15) / 16; ++l) __builtin_prefetch(w + l * 16, 0, 3);
}

// NV blocks x P pixels of accumulators, NV weight vectors and one broadcast live in
// registers; IB input lanes per block and the stride S are constants, so every broadcast
// address is the tap's pointer plus a constant. The kernel runs a.tiles tiles along the
// row, P pixels apart (a call per tile cost a third of the time of 1x1 convs on 16-24
// input channels); a 1x1 kernel (kh = kw = 1) takes a loop without the tap loops. R > 1:
// tiles of R whole rows of P pixels, run down the plane.
template <class V, int W, int NV, int P, int IB, int S, int R = 1>
void nchwc_tile(const F32NchwcArgs& a, const float* x, const float* w, float* y) {
  const bool one_tap = a.kh == 1 && a.kw == 1;
  const float* r = a.r;
  for (size_t t = 0; t < a.tiles; ++t) {
    // Bias and clamp bounds are reloaded per tile: kept in registers across tiles they
    // pushed a 12-accumulator tile past the 16 registers of AVX2.
    V acc[R * P][NV];
    for (int v = 0; v < NV; ++v) {
      V b;
      __builtin_memcpy(&b, a.bias + v * W, sizeof(V));
#pragma GCC unroll 32
      for (int p = 0; p < R * P; ++p) acc[p][v] = b;
    }
    const float* wt = w;
    const size_t pf = a.w_pf;
    if (one_tap) {
      const size_t full = a.cb - (a.half_last ? 1 : 0);
      for (size_t cb = 0; cb < full; ++cb) {
        if (pf) nchwc_prefetch<IB * NV * W>(wt + pf);
        nchwc_lane_steps<V, W, NV, P, IB, S, R>(acc, x + cb * a.x_cbs, a.x_rs, wt);
        wt += IB * NV * W;
      }
      if constexpr (IB % 2 == 0)
        if (a.half_last)
          nchwc_lane_steps<V, W, NV, P, IB, S, R, IB / 2>(acc, x + full * a.x_cbs, a.x_rs, wt);
    } else {
      for (size_t cb = 0; cb < a.cb; ++cb) {
        const float* xc = x + cb * a.x_cbs;
        for (size_t i = 0; i < a.kh; ++i) {
          const float* xr = xc + i * a.x_khs;
          for (size_t j = 0; j < a.kw; ++j) {
            if (pf) nchwc_prefetch<IB * NV * W>(wt + pf);
            nchwc_lane_steps<V, W, NV, P, IB, S, R>(acc, xr + j * a.x_kws, a.x_rs, wt);
            wt += IB * NV * W;
          }
        }
      }
    }
    const V lo = a.lo - V{}, hi = a.hi - V{};
    for (int v = 0; v < NV; ++v)
      for (int q = 0; q < R; ++q)
#pragma GCC unroll 32
        for (int p = 0; p < P; ++p) {
          const size_t at = v * a.y_cbs + q * a.y_rs + p * W;
          V o = acc[q * P + p][v];
          if (r) {
            V rv;
            __builtin_memcpy(&rv, r + at, sizeof(V));
            o += rv;
          }
          o = o < lo ? lo : o;
          o = o > hi ? hi : o;
          __builtin_memcpy(y + at, &o, sizeof(V));
        }
    const size_t x_step = R == 1 ? P * S * IB : R * a.x_rs;
    const size_t y_step = R == 1 ? P * W : R * a.y_rs;
    x += x_step;
    y += y_step;
    if (r) r += y_step;
  }
}

// The kernel of P pixels, or null past the register budget (never instantiated).
template <class V, int W, int ACC, int REGS, int NV, int P, int IB, int S>
constexpr F32NchwcFn nchwc_entry() {
  if constexpr (dlas::ukernel::nchwc_tile_fits(ACC, REGS, NV, P))
    return &nchwc_tile<V, W, NV, P, IB, S>;
  else
    return nullptr;
}

// Table of every P in 1..kNchwcMaxPixels for one (NV, IB, S).
template <class V, int W, int ACC, int REGS, int NV, int IB, int S, int... Ps>
F32NchwcFn nchwc_pick(int pixels, std::integer_sequence<int, Ps...>) {
  constexpr F32NchwcFn fns[] = {nchwc_entry<V, W, ACC, REGS, NV, Ps + 1, IB, S>()...};
  return pixels >= 1 && pixels <= static_cast<int>(sizeof...(Ps)) ? fns[pixels - 1] : nullptr;
}

template <class V, int W, int ACC, int REGS, int NV>
F32NchwcFn nchwc_select_nv(int pixels, int in_lanes, int stride) {
  using Seq = std::make_integer_sequence<int, dlas::ukernel::kNchwcMaxPixels>;
  if (!dlas::ukernel::nchwc_tile_fits(ACC, REGS, NV, pixels)) return nullptr;
  if (in_lanes == W && stride == 1) return nchwc_pick<V, W, ACC, REGS, NV, W, 1>(pixels, Seq{});
  if (in_lanes == W && stride == 2) return nchwc_pick<V, W, ACC, REGS, NV, W, 2>(pixels, Seq{});
  if (in_lanes == 1 && stride == 1) return nchwc_pick<V, W, ACC, REGS, NV, 1, 1>(pixels, Seq{});
  if (in_lanes == 1 && stride == 2) return nchwc_pick<V, W, ACC, REGS, NV, 1, 2>(pixels, Seq{});
  return nullptr;
}

// Whole-row tiles: R rows of P pixels (nchwc_row_cols) for one (NV, S), blocked input.
template <class V, int W, int ACC, int REGS, int NV, int R, int P, int S>
constexpr F32NchwcFn nchwc_row_entry() {
  if constexpr (dlas::ukernel::nchwc_row_cols(P) &&
                dlas::ukernel::nchwc_tile_fits(ACC, REGS, NV, R * P))
    return &nchwc_tile<V, W, NV, P, W, S, R>;
  else
    return nullptr;
}

template <class V, int W, int ACC, int REGS, int NV, int R, int S, int... Ps>
F32NchwcFn nchwc_pick_rows(int cols, std::integer_sequence<int, Ps...>) {
  constexpr F32NchwcFn fns[] = {nchwc_row_entry<V, W, ACC, REGS, NV, R, Ps + 2, S>()...};
  return cols >= 2 && cols < 2 + static_cast<int>(sizeof...(Ps)) ? fns[cols - 2] : nullptr;
}

template <class V, int W, int ACC, int REGS, int NV, int R>
F32NchwcFn nchwc_select_rows(int cols, int stride) {
  using Seq = std::make_integer_sequence<int, dlas::ukernel::kNchwcMaxRowCols - 1>;
  if (stride == 1) return nchwc_pick_rows<V, W, ACC, REGS, NV, R, 1>(cols, Seq{});
  if (stride == 2) return nchwc_pick_rows<V, W, ACC, REGS, NV, R, 2>(cols, Seq{});
  return nullptr;
}

template <class V, int W, int ACC, int REGS, int NV>
F32NchwcFn nchwc_select_nv(int pixels, int in_lanes, int stride, int rows) {
  if (rows == 1) return nchwc_select_nv<V, W, ACC, REGS, NV>(pixels, in_lanes, stride);
  if constexpr (NV > dlas::ukernel::kNchwcMaxRowBlocks) return nullptr;
  if (in_lanes != W) return nullptr;
  static_assert(dlas::ukernel::kNchwcMaxRows == 4);
  switch (rows) {
    case 2:
      return nchwc_select_rows<V, W, ACC, REGS, NV, 2>(pixels, stride);
    case 3:
      return nchwc_select_rows<V, W, ACC, REGS, NV, 3>(pixels, stride);
    case 4:
      return nchwc_select_rows<V, W, ACC, REGS, NV, 4>(pixels, stride);
  }
  return nullptr;
}

template <class V, int W, int ACC, int REGS>
F32NchwcFn nchwc_select(int blocks, int pixels, int in_lanes, int stride, int rows) {
  switch (blocks) {
    case 1:
      return nchwc_select_nv<V, W, ACC, REGS, 1>(pixels, in_lanes, stride, rows);
    case 2:
      return nchwc_select_nv<V, W, ACC, REGS, 2>(pixels, in_lanes, stride, rows);
    case 3:
      return nchwc_select_nv<V, W, ACC, REGS, 3>(pixels, in_lanes, stride, rows);
    case 4:
      return nchwc_select_nv<V, W, ACC, REGS, 4>(pixels, in_lanes, stride, rows);
  }
  return nullptr;
}

}  // namespace

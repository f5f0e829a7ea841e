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
// stride along W (0: read from the arguments).
template <class V, int W, int P, int S>
void dwnchwc_tile(const F32DwNchwcArgs& a, const float* x, const float* w, float* y) {
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

template <class V, int W, int S, int... Ps>
F32DwNchwcFn dwnchwc_pick(int pixels, int max_pixels, std::integer_sequence<int, Ps...>) {
  constexpr F32DwNchwcFn fns[] = {&dwnchwc_tile<V, W, Ps + 1, S>...};
  return pixels >= 1 && pixels <= max_pixels && pixels <= static_cast<int>(sizeof...(Ps))
             ? fns[pixels - 1]
             : nullptr;
}

template <class V, int W, int ACC>
F32DwNchwcFn dwnchwc_select(int pixels, int stride) {
  constexpr int kMax =
      ACC < dlas::ukernel::kDwNchwcMaxPixels ? ACC : dlas::ukernel::kDwNchwcMaxPixels;
  using Seq = std::make_integer_sequence<int, kMax>;
  if (stride == 1) return dwnchwc_pick<V, W, 1>(pixels, kMax, Seq{});
  if (stride == 2) return dwnchwc_pick<V, W, 2>(pixels, kMax, Seq{});
  return dwnchwc_pick<V, W, 0>(pixels, kMax, Seq{});
}

}  // namespace

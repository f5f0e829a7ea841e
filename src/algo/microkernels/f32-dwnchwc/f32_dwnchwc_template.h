// The blocked-layout depthwise tile kernel, written once over a GCC vector type V of W
// lanes and an IO policy (how the activations are stored: F32Io here; bf16 storage widened
// and rounded in registers: bf16-dwnchwc); each ISA TU instantiates it for every pixel
// count. Anonymous namespace: each TU keeps its own copy, so the linker can never hand the
// AVX2 path an AVX-512 instantiation.
#pragma once

#include <array>
#include <cstddef>
#include <utility>

#include "algo/microkernels/f32-dwnchwc/f32_dwnchwc.h"

namespace {

using dlas::ukernel::F32DwNchwcArgs;
using dlas::ukernel::F32DwNchwcFn;

// Calls f(std::integral_constant<int, i>) for i in [0, N), each index a constant
// expression (so arrays indexed by it stay in registers).
template <int N, class F>
__attribute__((always_inline)) inline void static_for(F&& f) {
  [&]<int... I>(std::integer_sequence<int, I...>) { (f(std::integral_constant<int, I>{}), ...); }
  (std::make_integer_sequence<int, N>{});
}

// f32 storage: input, residual and output are f32 vectors as stored.
template <class V>
struct F32Io {
  // A load folds into its FMA: load per tap (no column held in a register).
  static constexpr bool kLoadOncePerColumn = false;
  // Edge tiles of "same" paddings run bodies compiled for their padding columns in the
  // production sets; the test-only 16-lane AVX2 set copies its windows (its build time;
  // the 8-lane AVX2 set tests the compiled edges on AVX2 machines).
#ifdef __AVX512F__
  static constexpr bool kCompiledEdges = true;
#else
  static constexpr bool kCompiledEdges = sizeof(V) == 32;
#endif
  using Args = F32DwNchwcArgs;
  using X = float;  // input (and residual) element
  using Y = float;  // output element
  static V load(const float* p) {
    V v;
    __builtin_memcpy(&v, p, sizeof(V));
    return v;
  }
  static void store(float* p, V v) { __builtin_memcpy(p, &v, sizeof(V)); }
};

// P accumulators, one weight vector and one input vector live in registers; S is the
// stride along W (0: read from the arguments). KW > 0: the tile's taps along W are KW
// undilated columns, constants for the unrolled loops; a tile at the row's edges keeps all
// P accumulators and skips its window columns outside [q_lo, q_hi) (the padding): where LO
// and RO, the padding columns before and after the window's valid ones, are constants
// (q_lo == LO, q_hi == cols - RO), the (pixel, tap) pairs that read them are dropped at
// compile time; EDGE (any q_lo, q_hi) copies the row window into `win`, zeros outside.
template <class V, int W, int P, int S, int KW, bool EDGE, class IO, int LO = 0, int RO = 0>
void dwnchwc_body(const typename IO::Args& a, const typename IO::X* x, const float* w,
                  typename IO::Y* y) {
  using X = typename IO::X;
  V acc[P];
  {
    V b;
    __builtin_memcpy(&b, a.bias, sizeof(V));
    for (int p = 0; p < P; ++p) acc[p] = b;
  }
  const size_t ps = S ? static_cast<size_t>(S * W) : a.x_ps;
  for (size_t i = 0; i < a.kh; ++i) {
    const X* xr = x + i * a.x_khs;
    const float* wr = w + i * a.w_khs;
    if constexpr (KW > 0) {
      // Tap j of pixel p reads window column p * S + j. Loops over taps, then pixels
      // (each load folds into its FMA): indexing the accumulators by column, q - j, kept
      // them in memory (GCC's scalar replacement runs before the unrolling that would
      // make those indices constant; 0.4 FMA/cycle on Zen 3). An edge tile (x at column
      // q_lo) first copies its row window into `win`, zeros outside [q_lo, q_hi) (the
      // padding).
      constexpr int kCols = (P - 1) * S + KW;
      alignas(64) X win[EDGE ? kCols * W : 1];
      const X* src = xr;
      if constexpr (EDGE) {
        // One stored column as a vector of its own elements; zero is +0.0 in f32 and bf16.
        typedef X Col __attribute__((vector_size(W * sizeof(X))));
        for (int q = 0; q < kCols; ++q) {
          Col v = Col{};
          if (q >= a.q_lo && q < a.q_hi) __builtin_memcpy(&v, xr + (q - a.q_lo) * W, sizeof(Col));
          __builtin_memcpy(win + q * W, &v, sizeof(Col));
        }
        src = win;
      }
      if constexpr (IO::kLoadOncePerColumn) {
        // A load that converts costs more than its FMA: each window column is loaded
        // once and feeds the (pixel, tap) pairs that read it, columns ascending, so each
        // pixel still adds its taps in order j = 0..KW-1 (the f32 kernel's sums, bit for
        // bit). Constant indices keep the accumulators in registers.
        V wv[KW];
        for (int j = 0; j < KW; ++j) __builtin_memcpy(&wv[j], wr + j * W, sizeof(V));
        static_for<kCols>([&](auto qc) __attribute__((always_inline)) {
          constexpr int q = decltype(qc)::value;
          if constexpr (q < LO || q >= kCols - RO) return;  // padding: never read
          const V xv = IO::load(src + (q - LO) * W);
          static_for<KW>([&](auto jc) __attribute__((always_inline)) {
            constexpr int j = decltype(jc)::value;
            if constexpr (q - j >= 0 && (q - j) % S == 0 && (q - j) / S < P)
              acc[(q - j) / S] += xv * wv[j];
          });
        });
      } else if constexpr (LO > 0 || RO > 0) {
        // Taps then pixels, as below, each pair's column a constant: the pairs that read
        // the padding are not emitted.
        static_for<KW>([&](auto jc) __attribute__((always_inline)) {
          constexpr int j = decltype(jc)::value;
          V wv;
          __builtin_memcpy(&wv, wr + j * W, sizeof(V));
          static_for<P>([&](auto pc) __attribute__((always_inline)) {
            constexpr int q = decltype(pc)::value * S + j;
            if constexpr (q >= LO && q < kCols - RO)
              acc[decltype(pc)::value] += IO::load(src + (q - LO) * W) * wv;
          });
        });
      } else {
        for (int j = 0; j < KW; ++j) {
          V wv;
          __builtin_memcpy(&wv, wr + j * W, sizeof(V));
          for (int p = 0; p < P; ++p) acc[p] += IO::load(src + (p * S + j) * W) * wv;
        }
      }
    } else {
      for (size_t j = 0; j < a.kw; ++j) {
        const X* xt = xr + j * a.x_kws;
        V wv;
        __builtin_memcpy(&wv, wr + j * W, sizeof(V));
        for (int p = 0; p < P; ++p) acc[p] += IO::load(xt + p * ps) * wv;
      }
    }
  }
  // The residual pointer read once, and tested once, and the loops unrolled: re-read after
  // each store (which may alias `a`, as far as the compiler knows), it kept the accumulators
  // on the stack (10% of the 32x32 depthwise layers' time). Sets without compiled edges
  // (test-only, bf16's f32-out kernels) keep the rolled store, for their build time.
  const V lo = a.lo - V{}, hi = a.hi - V{};
  const auto* const r = a.r;
  if constexpr (IO::kCompiledEdges) {
    if (r) {
#pragma GCC unroll 16
      for (int p = 0; p < P; ++p) {
        V o = acc[p] + IO::load(r + p * W);
        o = o < lo ? lo : o;
        o = o > hi ? hi : o;
        IO::store(y + p * W, o);
      }
    } else {
#pragma GCC unroll 16
      for (int p = 0; p < P; ++p) {
        V o = acc[p];
        o = o < lo ? lo : o;
        o = o > hi ? hi : o;
        IO::store(y + p * W, o);
      }
    }
  } else {
    for (int p = 0; p < P; ++p) {
      V o = acc[p];
      if (r) o += IO::load(r + p * W);
      o = o < lo ? lo : o;
      o = o > hi ? hi : o;
      IO::store(y + p * W, o);
    }
  }
}

// An unrolled tile (KW > 0) whose window reaches into the padding runs the body compiled
// for its padding columns where there are at most KW / 2 on each side (a "same" padding's
// edges), else the body that copies its window; interior tiles run the body without either.
// (The copying body took 60% of mobilenetv2's 32x32 depthwise layer, whose 16-pixel tiles
// are all edge tiles: perf, AMD EPYC Zen 5.)
template <class V, int W, int P, int S, int KW, class IO>
void dwnchwc_tile(const typename IO::Args& a, const typename IO::X* x, const float* w,
                  typename IO::Y* y) {
  if constexpr (KW > 0) {
    constexpr int kCols = (P - 1) * S + KW, kM = KW / 2;
    const int lo = a.q_lo, ro = a.q_hi < kCols ? kCols - a.q_hi : 0;
    if (lo > 0 || ro > 0) {
      using Fn =
          void (*)(const typename IO::Args&, const typename IO::X*, const float*, typename IO::Y*);
      if (IO::kCompiledEdges && lo <= kM && ro <= kM && lo + ro < kCols) {
        // (Without compiled edges, one entry: no bodies to instantiate.)
        constexpr int kN = IO::kCompiledEdges ? (kM + 1) * (kM + 1) : 1;
        static constexpr auto fns = []<int... I>(std::integer_sequence<int, I...>) {
          return std::array<Fn, sizeof...(I)>{
              &dwnchwc_body<V, W, P, S, KW, false, IO, I / (kM + 1), I % (kM + 1)>...};
        }
        (std::make_integer_sequence<int, kN>{});
        return fns[static_cast<size_t>(lo * (kM + 1) + ro)](a, x, w, y);
      }
      return dwnchwc_body<V, W, P, S, KW, true, IO>(a, x, w, y);
    }
  }
  dwnchwc_body<V, W, P, S, KW, false, IO>(a, x, w, y);
}

template <class V, int W, int S, int KW, class IO, int... Ps>
auto dwnchwc_pick(int pixels, int max_pixels, std::integer_sequence<int, Ps...>) {
  using Fn =
      void (*)(const typename IO::Args&, const typename IO::X*, const float*, typename IO::Y*);
  constexpr Fn fns[] = {&dwnchwc_tile<V, W, Ps + 1, S, KW, IO>...};
  return pixels >= 1 && pixels <= max_pixels && pixels <= static_cast<int>(sizeof...(Ps))
             ? fns[pixels - 1]
             : nullptr;
}

template <class V, int W, int ACC, class IO = F32Io<V>>
auto dwnchwc_select(int pixels, int stride, int kw) {
  constexpr int kMax =
      ACC < dlas::ukernel::kDwNchwcMaxPixels ? ACC : dlas::ukernel::kDwNchwcMaxPixels;
  using Seq = std::make_integer_sequence<int, kMax>;
  if (stride == 1 && kw == 3) return dwnchwc_pick<V, W, 1, 3, IO>(pixels, kMax, Seq{});
  if (stride == 2 && kw == 3) return dwnchwc_pick<V, W, 2, 3, IO>(pixels, kMax, Seq{});
  if (stride == 1 && kw == 5) return dwnchwc_pick<V, W, 1, 5, IO>(pixels, kMax, Seq{});
  if (stride == 2 && kw == 5) return dwnchwc_pick<V, W, 2, 5, IO>(pixels, kMax, Seq{});
  if (stride == 1) return dwnchwc_pick<V, W, 1, 0, IO>(pixels, kMax, Seq{});
  if (stride == 2) return dwnchwc_pick<V, W, 2, 0, IO>(pixels, kMax, Seq{});
  return dwnchwc_pick<V, W, 0, 0, IO>(pixels, kMax, Seq{});
}

}  // namespace

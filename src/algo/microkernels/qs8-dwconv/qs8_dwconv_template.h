// The int8 depthwise kernel (contract: qs8_dwconv.h) over GCC vectors of L int32 lanes
// (output pixels of one row), with the requantizing store of qs8_gemm_template.h. P is the
// s16-pair policy of the qs8-gemm kernels: kLanes, dot (vpmaddwd + vpaddd) and fma. The
// whole body is in an anonymous namespace: internal linkage per ISA TU.
#pragma once

#include <cstring>
#include <utility>

#include "algo/microkernels/qs8-dwconv/qs8_dwconv.h"
#include "algo/microkernels/qs8-gemm/qs8_gemm_template.h"

namespace {

// 2L int16 (the bytes of one I: L pairs) and 2L bytes of input.
template <int L>
struct QDwVec {
  typedef int16_t s16 __attribute__((vector_size(4 * L)));
  typedef uint8_t u8 __attribute__((vector_size(2 * L)));
  typedef int8_t s8 __attribute__((vector_size(2 * L)));
};

// Interleaves half H of a and b: (a[h], b[h], a[h + 1], b[h + 1], ...), h = H * N / 2.
template <int H, class V, size_t... i>
inline V qs8_dw_zip(V a, V b, std::index_sequence<i...>) {
  constexpr int N = sizeof...(i);
  return __builtin_shuffle(
      a, b, V{static_cast<int16_t>((i % 2 ? N : 0) + H * N / 2 + static_cast<int>(i) / 2)...});
}

// xp[pad_l + c] = x[c] - x_zp for the input row's w columns; whole vectors whenever the
// read stays inside the plane (`left` bytes from xrow on), the lanes past w stored as the
// zeros they replace.
template <int L, class XV, class XT>
inline void qs8_dw_convert(const XT* s, int64_t w, int64_t left, int32_t zp, int16_t* dst) {
  typedef typename QDwVec<L>::s16 V;
  constexpr int N = 2 * L;
  const V vzp = V{} + static_cast<int16_t>(zp);
  int64_t i = 0;
  for (; i + N <= w; i += N) {
    XV v;
    std::memcpy(&v, s + i, N);
    const V r = __builtin_convertvector(v, V) - vzp;
    std::memcpy(dst + i, &r, sizeof(r));
  }
  if (i == w) return;
  if (i + N <= left) {  // xp has room: qs8_dwconv_config keeps N slack past the row
    XV v;
    std::memcpy(&v, s + i, N);
    V lane;
    for (int l = 0; l < N; ++l) lane[l] = static_cast<int16_t>(l);
    const V r = __builtin_convertvector(v, V) - vzp;
    const V out = lane < static_cast<int16_t>(w - i) ? r : V{};
    std::memcpy(dst + i, &out, sizeof(out));
    return;
  }
  for (; i < w; ++i) dst[i] = static_cast<int16_t>(s[i] - zp);
}

// Phase 1 of filling input row iy: the padded row xp (x - x_zp), which is the slot itself
// when direct.
template <int L>
inline void qs8_dw_fill_xp(const dlas::ukernel::QS8DwConfig& c, const void* x, int64_t iy,
                           int16_t* row) {
  const int64_t left = (c.h - iy) * c.w;  // bytes of the plane from this row on
  if (c.x_signed)
    qs8_dw_convert<L, typename QDwVec<L>::s8>(static_cast<const int8_t*>(x) + iy * c.w, c.w, left,
                                              c.x_zp, row + c.pad_l);
  else
    qs8_dw_convert<L, typename QDwVec<L>::u8>(static_cast<const uint8_t*>(x) + iy * c.w, c.w, left,
                                              c.x_zp, row + c.pad_l);
}

// Phase 2 (not direct): the pair rows of the slot from xp.
template <int L>
inline void qs8_dw_fill_pairs(const dlas::ukernel::QS8DwConfig& c, const int16_t* xp,
                              int16_t* slot) {
  typedef typename QDwVec<L>::s16 V;
  constexpr int N = 2 * L;
  // Pairs read by some output: ox < round_up(ow, L), tap offsets up to (kwp - 1) * tstep.
  const int64_t shared_ext = c.nsub == 1 ? (c.kwp - 1) * c.tstep : 0;
  const int64_t need = (c.ow + L - 1) / L * L + shared_ext;
  for (int u = 0; u < c.nsub; ++u) {
    const int16_t* a = xp + (c.nsub == 1 ? 0 : 2 * u * c.dw);
    int16_t* q = slot + 2 * u * c.wqp;
    if (c.sw == 1) {  // (xp[j], xp[j + dw]): interleave xp with itself shifted by dw
      for (int64_t j = 0; j < need; j += N) {
        V va, vb;
        std::memcpy(&va, a + j, sizeof(V));
        std::memcpy(&vb, a + j + c.dw, sizeof(V));
        const V lo = qs8_dw_zip<0>(va, vb, std::make_index_sequence<N>{});
        const V hi = qs8_dw_zip<1>(va, vb, std::make_index_sequence<N>{});
        std::memcpy(q + 2 * j, &lo, sizeof(V));
        std::memcpy(q + 2 * j + N, &hi, sizeof(V));
      }
    } else {
      for (int64_t j = 0; j < need; ++j) {
        q[2 * j] = a[c.sw * j];
        q[2 * j + 1] = a[c.sw * j + c.dw];
      }
    }
  }
}

// qs8_store_row's requantization for one output channel with its constants broadcast once
// (a plane's rows are short: per-row setup is a visible share of the work).
template <class P>
struct QDwRequant {
  typedef typename QVec<P::kLanes>::i32 I;
  typedef typename QVec<P::kLanes>::f32 F;
  F vm, vlo, vhi, rm;
  I zp, rzp;
  bool r_signed;
  QDwRequant(const dlas::ukernel::QS8GemmParams& p, float m)
      : vm(F{} + m),
        vlo(F{} + p.vlo),
        vhi(F{} + p.vhi),
        rm(F{} + p.rm),
        zp(I{} + p.y_zp),
        rzp(I{} + p.r_zp),
        r_signed(p.r_signed) {}
  // L pixels: y[0, L) from acc (and the residual r[0, L) when r).
  void store(I acc, const uint8_t* r, uint8_t* y) const {
    F t = F{};
    if (r) t = __builtin_convertvector(qs8_load_bytes<P>(r, r_signed) - rzp, F) * rm;
    F f = P::fma(__builtin_convertvector(acc, F), vm, t);
    f = f < vlo ? vlo : f;
    f = f > vhi ? vhi : f;
    qs8_store_low_bytes<P>(qs8_round<P>(f) + zp, y);
  }
  // n <= L pixels; whole vectors (reading / writing up to L - n bytes past the row, inside
  // the plane and rewritten later) when `room`.
  void store_tail(I acc, int64_t n, bool room, const uint8_t* r, uint8_t* y) const {
    constexpr int L = P::kLanes;
    if (room) {
      store(acc, r, y);
      return;
    }
    uint8_t rt[L] = {}, yt[L];
    if (r) qs8_copy_small(rt, r, n);
    store(acc, r ? rt : nullptr, yt);
    qs8_copy_small(y, yt, n);
  }
};

// Every output row of the task's planes. KH / KWP / TS: the kernel rows, tap pairs and
// tap-pair step when known at compile time (the weights then stay in registers and a tap is
// a row pointer + a constant), 0 for any.
template <class P, int NV, int KH, int KWP, int TS>
inline void qs8_dw_planes(const dlas::ukernel::QS8DwConfig& c, const dlas::ukernel::QS8DwTask& t,
                          const dlas::ukernel::QS8GemmParams& p) {
  constexpr int L = P::kLanes;
  typedef typename QVec<L>::i32 I;
  const int kh = KH ? KH : c.kh, kwp = KWP ? KWP : c.kwp;
  const int64_t tstep = TS ? TS : c.tstep;
  const int taps = kh * kwp;
  int16_t* zero = t.buf;
  int16_t* ring = t.buf + 2 * c.slot;
  int16_t* xp = ring + 2 * c.slot * c.ring;
  const int64_t ohw = c.oh * c.ow, ow = c.ow;
  const uint8_t* rb = static_cast<const uint8_t*>(t.residual);
  uint8_t* yb = static_cast<uint8_t*>(t.y);
  auto slot_of = [&](int64_t iy) { return ring + 2 * c.slot * (iy & (c.ring - 1)); };
  auto row_of = [&](int64_t iy) -> const int16_t* {
    return static_cast<uint64_t>(iy) >= static_cast<uint64_t>(c.h) ? zero : slot_of(iy);
  };
  int64_t next = 0;  // the first input row not yet filled
  for (int64_t oy0 = 0; oy0 < c.oh; oy0 += c.band) {
    const int64_t oy1 = oy0 + c.band < c.oh ? oy0 + c.band : c.oh;
    // The band's new input rows, each phase over all of them before the next reads its
    // results: a load right after a narrower or offset store of the same bytes waits for
    // the store (no forwarding), a load of a row written a band earlier does not.
    int64_t lo = oy0 * c.sh - c.pad_t, hi = (oy1 - 1) * c.sh - c.pad_t + (kh - 1) * c.dh + 1;
    if (lo < next) lo = next;
    if (lo < 0) lo = 0;
    if (hi > c.h) hi = c.h;
    for (int64_t iy = lo; iy < hi; ++iy)
      qs8_dw_fill_xp<L>(c, t.x, iy, c.direct ? slot_of(iy) : xp + (iy - lo) * c.xp_len);
    if (!c.direct)
      for (int64_t iy = lo; iy < hi; ++iy)
        qs8_dw_fill_pairs<L>(c, xp + (iy - lo) * c.xp_len, slot_of(iy));
    if (hi > next) next = hi;
    // Channel outside, rows inside: the weights stay in registers over the band.
    for (int j = 0; j < c.mult; ++j) {
      const int32_t* w = t.w + j * taps;
      const int32_t bias = t.bias[j];
      const float m = t.m[j];
      I wk[KH * KWP > 0 ? KH * KWP : 1];
      if constexpr (KH > 0)
        for (int i = 0; i < KH * KWP; ++i) wk[i] = I{} + w[i];
      const QDwRequant<P> rq(p, m);
      for (int64_t oy = oy0; oy < oy1; ++oy) {
        const int64_t iy0 = oy * c.sh - c.pad_t;
        // Tap pair i = ky * kwp + tp reads pairs from row(ky) + tp * tstep + ox (int16: x 2).
        const int16_t* rowk[KH > 0 ? KH : 1];
        if constexpr (KH > 0)
          for (int ky = 0; ky < KH; ++ky) rowk[ky] = row_of(iy0 + ky * c.dh);
        auto tap = [&](int i) -> const int16_t* {
          if constexpr (KH > 0) return rowk[i / KWP] + 2 * (i % KWP) * tstep;
          return row_of(iy0 + (i / kwp) * c.dh) + 2 * (i % kwp) * tstep;
        };
        const int64_t base = j * ohw + oy * ow;
        const uint8_t* rrow = rb ? rb + base : nullptr;
        uint8_t* yrow = yb + base;
        int64_t ox = 0;
        for (; ox + NV * L <= ow; ox += NV * L) {
          I acc[NV];
#pragma GCC unroll 8
          for (int v = 0; v < NV; ++v) acc[v] = I{} + bias;
#pragma GCC unroll 16
          for (int i = 0; i < taps; ++i) {
            const int16_t* s = tap(i) + 2 * ox;
            const I wv = KH > 0 ? wk[i] : I{} + w[i];
#pragma GCC unroll 8
            for (int v = 0; v < NV; ++v) {
              I xv;
              std::memcpy(&xv, s + 2 * v * L, sizeof(I));
              acc[v] = P::dot(acc[v], xv, wv);
            }
          }
#pragma GCC unroll 8
          for (int v = 0; v < NV; ++v)
            rq.store(acc[v], rrow ? rrow + ox + v * L : nullptr, yrow + ox + v * L);
        }
        for (; ox < ow; ox += L) {
          I acc = I{} + bias;
#pragma GCC unroll 16
          for (int i = 0; i < taps; ++i) {
            I xv;
            std::memcpy(&xv, tap(i) + 2 * ox, sizeof(I));
            acc = P::dot(acc, xv, KH > 0 ? wk[i] : I{} + w[i]);
          }
          const int64_t n = ow - ox < L ? ow - ox : L;
          // Whole vectors while they end inside this plane (and y is not the residual itself).
          const bool room = base + ox + L <= (j + 1) * ohw && rb != yb;
          rq.store_tail(acc, n, room, rrow ? rrow + ox : nullptr, yrow + ox);
        }
      }
    }
  }
}

// 3x3 and 5x5 kernels unrolled, with the tap-pair steps of stride 1 (2) and stride 2 (1)
// at dilation 1 fixed.
template <class P, int NV, int KH, int KWP>
inline void qs8_dw_unrolled(const dlas::ukernel::QS8DwConfig& c, const dlas::ukernel::QS8DwTask& t,
                            const dlas::ukernel::QS8GemmParams& p) {
  if (c.tstep == 2)
    qs8_dw_planes<P, NV, KH, KWP, 2>(c, t, p);
  else if (c.tstep == 1)
    qs8_dw_planes<P, NV, KH, KWP, 1>(c, t, p);
  else
    qs8_dw_planes<P, NV, KH, KWP, 0>(c, t, p);
}

// The list's kernel body: 3x3 and 5x5 unrolled, any other kernel through the general loop.
template <class P, int NV>
inline void qs8_dwconv_run(const dlas::ukernel::QS8DwConfig& c, const dlas::ukernel::QS8DwTask& t,
                           const dlas::ukernel::QS8GemmParams& p) {
  if (c.kh == 3 && c.kwp == 2)
    qs8_dw_unrolled<P, NV, 3, 2>(c, t, p);
  else if (c.kh == 5 && c.kwp == 3)
    qs8_dw_unrolled<P, NV, 5, 3>(c, t, p);
  else
    qs8_dw_planes<P, NV, 0, 0, 0>(c, t, p);
}

}  // namespace

// Defines the list's kernel fn: qs8_dwconv_run with pair policy P and NV vectors per block.
#define DLAS_QS8_DWCONV_KERNEL(fn, P, NV)                                     \
  void fn(const QS8DwConfig& c, const QS8DwTask& t, const QS8GemmParams& p) { \
    qs8_dwconv_run<P, NV>(c, t, p);                                           \
  }

// The channels-as-lanes int8 depthwise kernel (qs8_dwchan.h) written once over GCC vector
// types and qs8_gemm_template.h's policy P (P::fma for the taps, exact on integers; its byte
// moves and rounding for the store), so each ISA's TU instantiates it with its intrinsics and the
// tests instantiate the 16-lane kernel with exact scalar models of the instructions on AVX2
// (tests/algo/qs8_logic.h). Anonymous namespace: internal linkage per TU.
#pragma once

#include <cstdint>
#include <cstring>

#include "algo/microkernels/qs8-dwchan/qs8_dwchan.h"
#include "algo/microkernels/qs8-gemm/qs8_gemm_template.h"

// GCC 12 reports the widening intrinsics' own "undefined" source operand (__Y = __Y in
// avx512fintrin.h) as maybe-uninitialized once they are inlined here; it is never read.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

namespace {

typedef uint8_t QDcBytes __attribute__((vector_size(16)));

constexpr int qs8_dc_bitrev4(int k) {
  return ((k & 1) << 3) | ((k & 2) << 1) | ((k & 4) >> 1) | ((k & 8) >> 3);
}

// out[j][i] = in[i][j] for 16 x 16 bytes: four rounds of interleaves (punpck{l,h}{bw,wd,dq,qdq})
// of row pairs; after the fourth, vector k holds column bitrev4(k).
inline void qs8_dc_transpose16(const QDcBytes* in, QDcBytes* out) {
  QDcBytes a[16], b[16];
#pragma GCC unroll 8
  for (int i = 0; i < 8; ++i) {
    a[i] = __builtin_shufflevector(in[2 * i], in[2 * i + 1], 0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5,
                                   21, 6, 22, 7, 23);
    a[i + 8] = __builtin_shufflevector(in[2 * i], in[2 * i + 1], 8, 24, 9, 25, 10, 26, 11, 27, 12,
                                       28, 13, 29, 14, 30, 15, 31);
  }
#pragma GCC unroll 8
  for (int i = 0; i < 8; ++i) {
    b[i] = __builtin_shufflevector(a[2 * i], a[2 * i + 1], 0, 1, 16, 17, 2, 3, 18, 19, 4, 5, 20, 21,
                                   6, 7, 22, 23);
    b[i + 8] = __builtin_shufflevector(a[2 * i], a[2 * i + 1], 8, 9, 24, 25, 10, 11, 26, 27, 12, 13,
                                       28, 29, 14, 15, 30, 31);
  }
#pragma GCC unroll 8
  for (int i = 0; i < 8; ++i) {
    a[i] = __builtin_shufflevector(b[2 * i], b[2 * i + 1], 0, 1, 2, 3, 16, 17, 18, 19, 4, 5, 6, 7,
                                   20, 21, 22, 23);
    a[i + 8] = __builtin_shufflevector(b[2 * i], b[2 * i + 1], 8, 9, 10, 11, 24, 25, 26, 27, 12, 13,
                                       14, 15, 28, 29, 30, 31);
  }
#pragma GCC unroll 8
  for (int i = 0; i < 8; ++i) {
    out[qs8_dc_bitrev4(i)] = __builtin_shufflevector(a[2 * i], a[2 * i + 1], 0, 1, 2, 3, 4, 5, 6, 7,
                                                     16, 17, 18, 19, 20, 21, 22, 23);
    out[qs8_dc_bitrev4(i + 8)] = __builtin_shufflevector(
        a[2 * i], a[2 * i + 1], 8, 9, 10, 11, 12, 13, 14, 15, 24, 25, 26, 27, 28, 29, 30, 31);
  }
}

// rows[i] = the n <= 16 bytes at src + i * stride for i < nrows (16 in place while they stay
// before `end`, the last row's bytes otherwise moved by size), 0 elsewhere.
inline void qs8_dc_gather(const uint8_t* src, int64_t stride, int nrows, int64_t n,
                          const uint8_t* end, QDcBytes* rows) {
  if (nrows == 16 && src + 15 * stride + 16 <= end) {  // the common case: straight loads
#pragma GCC unroll 16
    for (int i = 0; i < 16; ++i) std::memcpy(&rows[i], src + i * stride, 16);
    return;
  }
  for (int i = 0; i < 16; ++i) {
    rows[i] = QDcBytes{};
    if (i >= nrows) continue;
    const uint8_t* s = src + i * stride;
    if (s + 16 <= end)
      std::memcpy(&rows[i], s, 16);
    else
      qs8_copy_small(reinterpret_cast<uint8_t*>(&rows[i]), s, n);
  }
}

// Stages input rows iy0 .. iy0 + nrows - 1 of the block into S (qs8_dwchan.h). The rows
// inside the input are consecutive in each plane, so they are transposed as one run of
// pixels, 16 at a time whatever the width (a 4x4 plane is one transpose).
template <class P>
inline void qs8_dc_stage(const dlas::ukernel::QS8DwChanConfig& c,
                         const dlas::ukernel::QS8DwChanTask& t, int64_t iy0, int64_t nrows,
                         float* S) {
  constexpr int L = P::kLanes;
  typedef typename QVec<L>::i32 I;
  const int64_t hw = c.h * c.w, wp = c.wp, w = c.w;
  const uint8_t* xb = static_cast<const uint8_t*>(t.x);
  const uint8_t* end = xb + (t.channels - 1) * hw + hw;
  typedef typename QVec<L>::f32 F;
  const F zp = F{} + static_cast<float>(c.x_zp);
  auto fill = [&](float* dst, int64_t pixels) {
    for (int64_t i = 0; i < pixels; ++i) std::memcpy(dst + i * L, &zp, sizeof(F));
  };
  // Padding holds x_zp: written once per buffer (header word 0), never overwritten; rows
  // outside the input are refilled unless the header says they still hold only x_zp.
  int32_t* hdr = t.buf;
  if (!hdr[0]) {
    fill(S, c.rows * wp);
    hdr[0] = 1;
    for (int64_t r = 0; r < c.rows; ++r) hdr[1 + r] = 1;
  }
  const int64_t lo = iy0 > 0 ? iy0 : 0, hi = iy0 + nrows < c.h ? iy0 + nrows : c.h;
  for (int64_t r = 0; r < nrows; ++r) {
    const int64_t iy = iy0 + r;
    const bool outside = iy < lo || iy >= hi;
    if (outside && !hdr[1 + r]) fill(S + r * wp * L, wp);
    hdr[1 + r] = outside;
  }
  if (lo >= hi || c.pad_l >= wp) return;
  if (c.blocked) {  // each pixel's block is one vector of lanes
    const int64_t cols = c.pad_l + w <= wp ? w : wp - c.pad_l;
    for (int64_t iy = lo; iy < hi; ++iy) {
      const uint8_t* src = xb + iy * w * L;
      float* d = S + ((iy - iy0) * wp + c.pad_l) * L;
      for (int64_t ix = 0; ix < cols; ++ix) {
        const F v = __builtin_convertvector(qs8_load_bytes<P>(src + ix * L, c.x_signed), F);
        std::memcpy(d + ix * L, &v, sizeof(F));
      }
    }
    return;
  }
  // Staged position of run pixel (iy, ix): row iy - iy0, column pad_l + ix; columns past wp
  // are never read (and not written: they would be the next row's padding).
  const bool whole_rows = c.pad_l + w <= wp;
  float* dst = S + ((lo - iy0) * wp + c.pad_l) * L;
  const int64_t gap = (wp - w) * L;
  int64_t ix = 0;
  for (int64_t f = lo * w; f < hi * w; f += 16) {
    const int64_t n = hi * w - f < 16 ? hi * w - f : 16;
    QDcBytes in[16], px[16];
    qs8_dc_gather(xb + f, hw, t.channels, n, end, in);
    qs8_dc_transpose16(in, px);
    for (int64_t j = 0; j < n; ++j) {
      if (whole_rows || c.pad_l + ix < wp) {
        const F v = __builtin_convertvector(qs8_load_bytes<P>(&px[j], c.x_signed), F);
        std::memcpy(dst, &v, sizeof(F));
      }
      dst += L;
      if (++ix == w) ix = 0, dst += gap;
    }
  }
}

// One band. KT: the kernel's taps when fixed at compile time (weights loaded once), else 0.
template <class P, int TP, int KT>
inline void qs8_dc_band(const dlas::ukernel::QS8DwChanConfig& c,
                        const dlas::ukernel::QS8DwChanTask& t,
                        const dlas::ukernel::QS8GemmParams& p) {
  constexpr int L = P::kLanes;
  static_assert(L <= 16 && TP <= 16);
  typedef typename QVec<L>::i32 I;
  typedef typename QVec<L>::f32 F;
  const int64_t wp = c.wp, ow = c.ow, ohw = c.oh * c.ow;
  const int64_t iy0 = t.oy0 * c.sh - c.pad_t;
  const int64_t nrows = (t.oy1 - t.oy0 - 1) * c.sh + (c.kh - 1) * c.dh + 1;
  float* S = reinterpret_cast<float*>(t.buf + dlas::ukernel::qs8_dwchan_header_elems(c));
  qs8_dc_stage<P>(c, t, iy0, nrows, S);

  const int taps = KT ? KT : c.kh * c.kw;
  int64_t toff[KT ? KT : 64];
  for (int i = 0; i < taps; ++i) toff[i] = ((i / c.kw) * c.dh * wp + (i % c.kw) * c.dw) * L;
  I vb;
  F vm;
  std::memcpy(&vb, t.bias, sizeof(I));
  std::memcpy(&vm, t.m, sizeof(F));
  const F vlo = F{} + p.vlo, vhi = F{} + p.vhi, rm = F{} + p.rm;
  const I zp = I{} + p.y_zp, rzp = I{} + p.r_zp;

  const uint8_t* rb = static_cast<const uint8_t*>(t.residual);
  uint8_t* yb = static_cast<uint8_t*>(t.y);
  const uint8_t* rend = rb ? rb + (t.channels - 1) * ohw + ohw : nullptr;
  const int64_t npix = (t.oy1 - t.oy0) * ow, pix0 = t.oy0 * ow;
  int64_t ry = 0, rx = 0;  // the tile's first pixel in the band
  for (int64_t p0 = 0; p0 < npix; p0 += TP) {
    const int64_t n = npix - p0 < TP ? npix - p0 : TP;
    // Staged offset of each pixel's tap 0 (a tail tile repeats its last pixel).
    int64_t off[TP];
    {
      int64_t y = ry, x = rx;
      for (int i = 0; i < TP; ++i) {
        off[i] = (y * c.sh * wp + x * c.sw) * L;
        if (i + 1 < n && ++x == ow) x = 0, ++y;
      }
      rx += TP;
      if (rx >= ow) ry += rx / ow, rx %= ow;
    }
    // The taps' sum in float, exact: every product and partial sum is an integer below 2^24
    // (at most 64 taps of |x| <= 255 times |w| <= 128), then the int32 bias.
    F acc[TP];
#pragma GCC unroll 16
    for (int i = 0; i < TP; ++i) acc[i] = F{};
#pragma GCC unroll 25
    for (int k = 0; k < taps; ++k) {
      F wv;  // from memory each tap: 16 accumulators already fill half the registers
      std::memcpy(&wv, t.w + k * L, sizeof(F));
      const float* s = S + toff[k];
#pragma GCC unroll 16
      for (int i = 0; i < TP; ++i) {
        F xv;
        std::memcpy(&xv, s + off[i], sizeof(F));
        acc[i] = P::fma(xv, wv, acc[i]);
      }
    }
    // Requantize pixel by pixel (channels as lanes), then transpose to channel rows.
    QDcBytes res[16], pxb[16] = {}, out[16];
    if (rb && c.blocked) {
      for (int i = 0; i < TP; ++i)
        std::memcpy(&res[i], rb + (pix0 + p0 + (i < n ? i : n - 1)) * L, L);
    } else if (rb) {
      QDcBytes rin[16];
      qs8_dc_gather(rb + pix0 + p0, ohw, t.channels, n, rend, rin);
      qs8_dc_transpose16(rin, res);
    }
#pragma GCC unroll 16
    for (int i = 0; i < TP; ++i) {
      F tr = F{};
      if (rb) tr = __builtin_convertvector(qs8_load_bytes<P>(&res[i], p.r_signed) - rzp, F) * rm;
      const I sum = __builtin_convertvector(acc[i], I) + vb;
      F f = P::fma(__builtin_convertvector(sum, F), vm, tr);
      f = f < vlo ? vlo : f;
      f = f > vhi ? vhi : f;
      qs8_store_low_bytes<P>(qs8_round<P>(f) + zp, reinterpret_cast<uint8_t*>(&pxb[i]));
    }
    if (c.blocked) {
      for (int64_t i = 0; i < n; ++i) std::memcpy(yb + (pix0 + p0 + i) * L, &pxb[i], L);
      continue;
    }
    qs8_dc_transpose16(pxb, out);
    uint8_t* y = yb + pix0 + p0;
    for (int ch = 0; ch < t.channels; ++ch) {
      if (n == TP)
        std::memcpy(y + ch * ohw, &out[ch], TP);
      else
        qs8_copy_small(y + ch * ohw, reinterpret_cast<const uint8_t*>(&out[ch]), n);
    }
  }
}

template <class P, int TP>
inline void qs8_dc_taps(const dlas::ukernel::QS8DwChanConfig& c,
                        const dlas::ukernel::QS8DwChanTask& t,
                        const dlas::ukernel::QS8GemmParams& p) {
  const int taps = c.kh * c.kw;
  if (taps == 9)
    qs8_dc_band<P, TP, 9>(c, t, p);
  else if (taps == 25)
    qs8_dc_band<P, TP, 25>(c, t, p);
  else
    qs8_dc_band<P, TP, 0>(c, t, p);
}

// The list's kernel body: 3x3 and 5x5 unrolled; bands of at most 4 (8) pixels -- 2x2 and
// 1x1 planes -- on narrower tiles.
template <class P, int TP>
inline void qs8_dwchan_run(const dlas::ukernel::QS8DwChanConfig& c,
                           const dlas::ukernel::QS8DwChanTask& t,
                           const dlas::ukernel::QS8GemmParams& p) {
  const int64_t npix = (t.oy1 - t.oy0) * c.ow;
  if constexpr (TP > 4)
    if (npix <= 4) return qs8_dc_taps<P, 4>(c, t, p);
  if constexpr (TP > 8)
    if (npix <= 8) return qs8_dc_taps<P, 8>(c, t, p);
  qs8_dc_taps<P, TP>(c, t, p);
}

}  // namespace

#pragma GCC diagnostic pop

// Defines the list's kernel fn: qs8_dwchan_run with pair policy P and TP pixels per tile.
#define DLAS_QS8_DWCHAN_KERNEL(fn, P, TP)                                             \
  void fn(const QS8DwChanConfig& c, const QS8DwChanTask& t, const QS8GemmParams& p) { \
    qs8_dwchan_run<P, TP>(c, t, p);                                                   \
  }

// The depthwise-conv kernel bodies, written once over a GCC vector-extension type `Vec`
// of L floats (or plain float, L = 1). Everything here has internal linkage (anonymous
// namespace), so each ISA translation unit gets its own copy compiled with its own flags
// and the linker can never hand the AVX-512 copy to the AVX2 path. Include only from
// f32_dwconv_*lane__<isa>.cc files.
#pragma once

#include <cstdint>

#include "algo/microkernels/f32-dwconv/f32_dwconv.h"

namespace dlas::ukernel {
namespace {

template <class Vec>
inline Vec dw_load(const float* p) {
  Vec v;
  __builtin_memcpy(&v, p, sizeof v);
  return v;
}

template <class Vec>
inline void dw_store(float* p, Vec v) {
  __builtin_memcpy(p, &v, sizeof v);
}

template <class Vec, int L>
inline Vec dw_load_partial(const float* p, int64_t n) {
  float t[L] = {};
  for (int64_t i = 0; i < n; ++i) t[i] = p[i];
  return dw_load<Vec>(t);
}

template <class Vec, int L>
inline void dw_store_partial(float* p, Vec v, int64_t n) {
  float t[L];
  dw_store(t, v);
  for (int64_t i = 0; i < n; ++i) p[i] = t[i];
}

template <class Vec>
inline Vec dw_clamp(Vec v, Vec lo, Vec hi) {
  v = v < lo ? lo : v;  // maxps/minps: a NaN passes through as in the scalar epilogue
  return v > hi ? hi : v;
}

inline void dw_zero(float* p, int64_t n) {
  for (int64_t i = 0; i < n; ++i) p[i] = 0.f;
}

// dst[i] = src[s * i] for i < n. Stride 1 and 2 (the strides CNNs use) are vectorized;
// stride 2 loads 2L floats and keeps the even lanes (one two-source shuffle).
template <class Vec, class IVec, int L>
inline void dw_extract(float* __restrict dst, const float* __restrict src, int64_t n, int64_t s) {
  int64_t i = 0;
  if (s == 1) {
    for (; i + L <= n; i += L) dw_store(dst + i, dw_load<Vec>(src + i));
  } else if constexpr (L > 1) {
    if (s == 2) {
      // The last vector reads src[2i .. 2i + 2L - 1]; 2(n-1) is the last index needed, so
      // only whole windows inside [0, 2n - 1] are vectorized.
      for (; i + L < n; i += L) {
        const Vec a = dw_load<Vec>(src + 2 * i), b = dw_load<Vec>(src + 2 * i + L);
        IVec even;
        if constexpr (L == 8)
          even = IVec{0, 2, 4, 6, 8, 10, 12, 14};
        else
          even = IVec{0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30};
        dw_store(dst + i, __builtin_shuffle(a, b, even));
      }
    }
  }
  for (; i < n; ++i) dst[i] = src[s * i];
}

template <class Vec, class IVec, int L>
void dw_fill(const F32DwconvParams& p, const float* plane, int64_t py0, int64_t rows, float* buf) {
  const int64_t s = p.sw, pw = p.phase_width, rs = p.row_stride;
  // Rows above and below the input are all padding.
  const int64_t j0 = p.pad_t - py0 > 0 ? p.pad_t - py0 : 0;
  int64_t j1 = p.h + p.pad_t - py0;
  if (j1 > rows) j1 = rows;
  if (j1 < j0) j1 = j0;
  dw_zero(buf, j0 * rs);
  dw_zero(buf + j1 * rs, (rows - j1) * rs);
  // Phase f, position i holds input column s*i + s0 with s0 = f - pad_l; its valid range
  // [lo, hi) is the same for every row, so the divisions stay out of the row loop.
  for (int64_t f = 0; f < s; ++f) {
    const int64_t s0 = f - p.pad_l;
    int64_t lo = s0 >= 0 ? 0 : (-s0 + s - 1) / s;
    int64_t hi = p.w - s0 > 0 ? (p.w - s0 + s - 1) / s : 0;
    if (hi > pw) hi = pw;
    if (lo > hi) lo = hi;
    for (int64_t j = j0; j < j1; ++j) {
      const float* src = plane + (py0 + j - p.pad_t) * p.w;
      float* dst = buf + j * rs + f * pw;
      dw_zero(dst, lo);
      dw_extract<Vec, IVec, L>(dst + lo, src + s * lo + s0, hi - lo, s);
      dw_zero(dst + hi, pw - hi);
    }
  }
}

// Geometry template arguments: a compile-time size, or 0 for "read it from p". With all
// of them fixed the tap loops unroll fully and the loads of an input row shared by
// several output rows of the block fold into one.
template <class Vec, int L, int R, int U, int KH, int KW, int SH, int SW, int DH, int DW>
inline void dw_block(const F32DwconvParams& p, const float* __restrict b0,
                     const float* __restrict w, Vec vb, Vec vmin, Vec vmax,
                     const float* __restrict q0, float* __restrict o0) {
  const int64_t kh = KH ? KH : p.kh, kw = KW ? KW : p.kw, sh = SH ? SH : p.sh, sw = SW ? SW : p.sw,
                dh = DH ? DH : p.dh, dw = DW ? DW : p.dw;
  const int64_t ow = p.ow, rs = p.row_stride, pw = p.phase_width;
  constexpr bool kFixed = KH && KW;
  Vec wv[kFixed ? KH * KW : 1];
  if constexpr (kFixed)
    for (int i = 0; i < KH * KW; ++i) wv[i] = Vec{} + w[i];
  for (int64_t x = 0; x < ow; x += U * L) {
    Vec acc[R][U];
    for (int r = 0; r < R; ++r)
      for (int u = 0; u < U; ++u) acc[r][u] = vb;
    for (int64_t ky = 0; ky < kh; ++ky)
      for (int64_t kx = 0; kx < kw; ++kx) {
        Vec wk;
        if constexpr (kFixed)
          wk = wv[ky * KW + kx];
        else
          wk = Vec{} + w[ky * kw + kx];
        const float* col = b0 + ((kx * dw) % sw) * pw + (kx * dw) / sw + x + ky * dh * rs;
        for (int r = 0; r < R; ++r)
          for (int u = 0; u < U; ++u) acc[r][u] += wk * dw_load<Vec>(col + r * sh * rs + u * L);
      }
    const int64_t left = ow - x;
    for (int r = 0; r < R; ++r)
      for (int u = 0; u < U; ++u) {
        const int64_t m = left - u * L;
        if (m <= 0) break;
        Vec v = acc[r][u];
        float* dst = o0 + r * ow + x + u * L;
        if (m >= L) {
          if (q0) v += dw_load<Vec>(q0 + r * ow + x + u * L);
          dw_store(dst, dw_clamp(v, vmin, vmax));
        } else {
          if (q0) v += dw_load_partial<Vec, L>(q0 + r * ow + x + u * L, m);
          dw_store_partial<Vec, L>(dst, dw_clamp(v, vmin, vmax), m);
        }
      }
  }
}

template <class Vec, int L, int R, int U, int KH, int KW, int SH, int SW, int DH, int DW>
void dw_rows_geom(const F32DwconvParams& p, int64_t rows, const float* buf, const float* w,
                  float bias, const float* res, float* out) {
  const Vec vb = Vec{} + bias, vmin = Vec{} + p.clamp_min, vmax = Vec{} + p.clamp_max;
  const int64_t step = p.sh * p.row_stride, ow = p.ow;
  int64_t r = 0;
  for (; r + R <= rows; r += R)
    dw_block<Vec, L, R, U, KH, KW, SH, SW, DH, DW>(p, buf + r * step, w, vb, vmin, vmax,
                                                   res ? res + r * ow : nullptr, out + r * ow);
  // Leftover rows: a block of 2 when there is one (R = 4), then single rows.
  if constexpr (R > 2) {
    if (r + 2 <= rows) {
      dw_block<Vec, L, 2, U, KH, KW, SH, SW, DH, DW>(p, buf + r * step, w, vb, vmin, vmax,
                                                     res ? res + r * ow : nullptr, out + r * ow);
      r += 2;
    }
  }
  for (; r < rows; ++r)
    dw_block<Vec, L, 1, U, KH, KW, SH, SW, DH, DW>(p, buf + r * step, w, vb, vmin, vmax,
                                                   res ? res + r * ow : nullptr, out + r * ow);
}

// Specialized bodies for the shapes that matter (MobileNet/EfficientNet: 3x3 and 5x5,
// stride 1 and 2, no dilation); every other geometry takes the runtime body.
template <class Vec, int L, int R, int U>
void dw_rows(const F32DwconvParams& p, int64_t rows, const float* buf, const float* w, float bias,
             const float* res, float* out) {
  if (p.dh == 1 && p.dw == 1 && p.sh == p.sw && (p.sh == 1 || p.sh == 2)) {
    const bool s1 = p.sh == 1;
    if (p.kh == 3 && p.kw == 3)
      return s1 ? dw_rows_geom<Vec, L, R, U, 3, 3, 1, 1, 1, 1>(p, rows, buf, w, bias, res, out)
                : dw_rows_geom<Vec, L, R, U, 3, 3, 2, 2, 1, 1>(p, rows, buf, w, bias, res, out);
    if (p.kh == 5 && p.kw == 5)
      return s1 ? dw_rows_geom<Vec, L, R, U, 5, 5, 1, 1, 1, 1>(p, rows, buf, w, bias, res, out)
                : dw_rows_geom<Vec, L, R, U, 5, 5, 2, 2, 1, 1>(p, rows, buf, w, bias, res, out);
  }
  dw_rows_geom<Vec, L, R, U, 0, 0, 0, 0, 0, 0>(p, rows, buf, w, bias, res, out);
}

// ---- Channel-blocked layout: vectors across channels, one pixel per vector.

// In-register L x L transpose: log2(L) perfect-shuffle stages, each interleaving row i
// with row i + L/2 (after the last stage r[j] holds column j).
template <class Vec, class IVec, int L>
inline void dw_transpose(Vec* r) {
  if constexpr (L > 1) {
    IVec lo, hi;
    if constexpr (L == 8) {
      lo = IVec{0, 8, 1, 9, 2, 10, 3, 11};
      hi = IVec{4, 12, 5, 13, 6, 14, 7, 15};
    } else {
      lo = IVec{0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23};
      hi = IVec{8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15, 31};
    }
    for (int s = 1; s < L; s *= 2) {
      Vec n[L];
      for (int i = 0; i < L / 2; ++i) {
        n[2 * i] = __builtin_shuffle(r[i], r[i + L / 2], lo);
        n[2 * i + 1] = __builtin_shuffle(r[i], r[i + L / 2], hi);
      }
      for (int i = 0; i < L; ++i) r[i] = n[i];
    }
  }
}

template <class Vec, class IVec, int L>
void dw_cb_pack(const F32DwconvParams& p, const float* in, int64_t ls, int64_t valid, float* buf) {
  const int64_t pw = p.cb_w, w = p.w, hw = p.h * p.w;
  const int64_t x0 = p.pad_l < pw ? p.pad_l : pw;          // first data column
  const int64_t x1 = p.pad_l + w < pw ? p.pad_l + w : pw;  // past the last one
  const Vec z = Vec{};
  // Zero the border (rows outside the input, columns outside [x0, x1)).
  for (int64_t py = 0; py < p.cb_h; ++py) {
    float* row = buf + py * pw * L;
    const int64_t iy = py - p.pad_t;
    if (iy < 0 || iy >= p.h) {
      for (int64_t x = 0; x < pw; ++x) dw_store(row + x * L, z);
      continue;
    }
    for (int64_t x = 0; x < x0; ++x) dw_store(row + x * L, z);
    for (int64_t x = x1; x < pw; ++x) dw_store(row + x * L, z);
  }
  // Data: L consecutive pixels of the flattened planes at a time (a row of a small plane
  // is shorter than a vector), transposed in registers, each pixel's channel vector stored
  // at its padded position; lanes past `valid` read as zero.
  int64_t iy = 0, ix = 0;
  for (int64_t f = 0; f < hw; f += L) {
    const int64_t m = hw - f < L ? hw - f : L;
    Vec r[L];
    for (int l = 0; l < L; ++l) {
      if (l >= valid)
        r[l] = z;
      else if (m == L)
        r[l] = dw_load<Vec>(in + l * ls + f);
      else
        r[l] = dw_load_partial<Vec, L>(in + l * ls + f, m);
    }
    dw_transpose<Vec, IVec, L>(r);
    for (int64_t j = 0; j < m; ++j) {
      const int64_t py = iy + p.pad_t, px = ix + p.pad_l;
      if (py < p.cb_h && px < pw) dw_store(buf + (py * pw + px) * L, r[j]);
      if (++ix == w) ix = 0, ++iy;
    }
  }
}

// U adjacent output pixels of one row: each weight vector load feeds U FMAs, and with a
// fixed geometry the loads of input pixels shared by neighbouring outputs fold into one.
template <class Vec, int L, int U, int KH, int KW, int SW, int DH, int DW>
inline void dw_cb_step(const F32DwconvParams& p, const float* __restrict b0,
                       const float* __restrict w, Vec vb, float* __restrict t0) {
  const int64_t kh = KH ? KH : p.kh, kw = KW ? KW : p.kw, sw = SW ? SW : p.sw, dh = DH ? DH : p.dh,
                dw = DW ? DW : p.dw, pw = p.cb_w;
  Vec acc[U];
  for (int u = 0; u < U; ++u) acc[u] = vb;
  for (int64_t ky = 0; ky < kh; ++ky)
    for (int64_t kx = 0; kx < kw; ++kx) {
      const Vec wk = dw_load<Vec>(w + (ky * kw + kx) * L);
      const float* s = b0 + (ky * dh * pw + kx * dw) * L;
      for (int u = 0; u < U; ++u) acc[u] += wk * dw_load<Vec>(s + u * sw * L);
    }
  for (int u = 0; u < U; ++u) dw_store(t0 + u * L, acc[u]);
}

template <class Vec, int L, int KH, int KW, int SH, int SW, int DH, int DW>
void dw_cb_rows_geom(const F32DwconvParams& p, const float* buf, const float* w, const float* bias,
                     float* tmp) {
  const int64_t sh = SH ? SH : p.sh, sw = SW ? SW : p.sw, ow = p.ow, pw = p.cb_w;
  const Vec vb = dw_load<Vec>(bias);
  // 4 accumulators + up to 9 weight vectors + input vectors fit 16 registers for 3x3.
  constexpr int U = 4;
  for (int64_t oy = 0; oy < p.oh; ++oy) {
    const float* b0 = buf + oy * sh * pw * L;
    float* t0 = tmp + oy * ow * L;
    int64_t ox = 0;
    for (; ox + U <= ow; ox += U)
      dw_cb_step<Vec, L, U, KH, KW, SW, DH, DW>(p, b0 + ox * sw * L, w, vb, t0 + ox * L);
    if (ox + 2 <= ow) {
      dw_cb_step<Vec, L, 2, KH, KW, SW, DH, DW>(p, b0 + ox * sw * L, w, vb, t0 + ox * L);
      ox += 2;
    }
    if (ox < ow) dw_cb_step<Vec, L, 1, KH, KW, SW, DH, DW>(p, b0 + ox * sw * L, w, vb, t0 + ox * L);
  }
}

template <class Vec, int L>
void dw_cb_rows(const F32DwconvParams& p, const float* buf, const float* w, const float* bias,
                float* tmp) {
  if (p.dh == 1 && p.dw == 1 && p.sh == p.sw && (p.sh == 1 || p.sh == 2)) {
    const bool s1 = p.sh == 1;
    if (p.kh == 3 && p.kw == 3)
      return s1 ? dw_cb_rows_geom<Vec, L, 3, 3, 1, 1, 1, 1>(p, buf, w, bias, tmp)
                : dw_cb_rows_geom<Vec, L, 3, 3, 2, 2, 1, 1>(p, buf, w, bias, tmp);
    if (p.kh == 5 && p.kw == 5)
      return s1 ? dw_cb_rows_geom<Vec, L, 5, 5, 1, 1, 1, 1>(p, buf, w, bias, tmp)
                : dw_cb_rows_geom<Vec, L, 5, 5, 2, 2, 1, 1>(p, buf, w, bias, tmp);
  }
  dw_cb_rows_geom<Vec, L, 0, 0, 0, 0, 0, 0>(p, buf, w, bias, tmp);
}

template <class Vec, class IVec, int L>
void dw_cb_unpack(const F32DwconvParams& p, const float* tmp, int64_t valid, int64_t ls,
                  const float* res, float* out) {
  const int64_t n = p.oh * p.ow;
  const Vec vmin = Vec{} + p.clamp_min, vmax = Vec{} + p.clamp_max;
  // L pixels at a time: L pixel vectors transposed into L channel vectors of L pixels.
  for (int64_t i = 0; i < n; i += L) {
    const int64_t m = n - i < L ? n - i : L;
    Vec r[L];
    for (int j = 0; j < L; ++j) r[j] = j < m ? dw_load<Vec>(tmp + (i + j) * L) : Vec{};
    dw_transpose<Vec, IVec, L>(r);
    for (int64_t l = 0; l < valid; ++l) {
      Vec v = r[l];
      float* o = out + l * ls + i;
      if (m == L) {
        if (res) v += dw_load<Vec>(res + l * ls + i);
        dw_store(o, dw_clamp(v, vmin, vmax));
      } else {
        if (res) v += dw_load_partial<Vec, L>(res + l * ls + i, m);
        dw_store_partial<Vec, L>(o, dw_clamp(v, vmin, vmax), m);
      }
    }
  }
}

template <class Vec, class IVec, int L>
constexpr F32DwconvKernels make_dwconv_kernels() {
  static_assert(kF32DwconvRows[0] == 1 && kF32DwconvRows[1] == 2 && kF32DwconvRows[2] == 4);
  static_assert(kF32DwconvVecs[0] == 1 && kF32DwconvVecs[1] == 2);
  return F32DwconvKernels{L,
                          &dw_fill<Vec, IVec, L>,
                          {{&dw_rows<Vec, L, 1, 1>, &dw_rows<Vec, L, 1, 2>},
                           {&dw_rows<Vec, L, 2, 1>, &dw_rows<Vec, L, 2, 2>},
                           {&dw_rows<Vec, L, 4, 1>, &dw_rows<Vec, L, 4, 2>}},
                          &dw_cb_pack<Vec, IVec, L>,
                          &dw_cb_rows<Vec, L>,
                          &dw_cb_unpack<Vec, IVec, L>};
}

}  // namespace
}  // namespace dlas::ukernel

// The depthwise-conv kernel bodies, written once over a GCC vector-extension type `Vec`
// of L floats (or plain float, L = 1). Everything here has internal linkage (anonymous
// namespace), so each ISA translation unit gets its own copy compiled with its own flags
// and the linker can never hand the AVX-512 copy to the AVX2 path. Include only from
// f32_dwconv_*lane__<isa>.cc files.
#pragma once

#include <cstdint>

#include "algo/microkernels/f32_dwconv.h"

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

template <class Vec, class IVec, int L>
constexpr F32DwconvKernels make_dwconv_kernels() {
  static_assert(kF32DwconvRows[0] == 1 && kF32DwconvRows[1] == 2 && kF32DwconvRows[2] == 4);
  static_assert(kF32DwconvVecs[0] == 1 && kF32DwconvVecs[1] == 2);
  return F32DwconvKernels{L,
                          &dw_fill<Vec, IVec, L>,
                          {{&dw_rows<Vec, L, 1, 1>, &dw_rows<Vec, L, 1, 2>},
                           {&dw_rows<Vec, L, 2, 1>, &dw_rows<Vec, L, 2, 2>},
                           {&dw_rows<Vec, L, 4, 1>, &dw_rows<Vec, L, 4, 2>}}};
}

}  // namespace
}  // namespace dlas::ukernel

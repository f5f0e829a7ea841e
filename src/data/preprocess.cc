// Preprocessing of one u8 image: [0,1], bilinear resize, center crop, random pad-crop and
// flip (training), channel replicate/average, normalize.
#include <algorithm>
#include <cmath>

#include "data/data_internal.h"
#include "dlas/core/error.h"

namespace dlas::data {

namespace {

struct Geometry {
  int64_t c_in, h_in, w_in;  // decoded
  int64_t h_rs, w_rs;        // after resize
  int64_t c_out, h_out, w_out;
};

Geometry geometry(const Preprocess& p, const DatasetInfo& info) {
  Geometry g;
  g.c_in = info.channels;
  g.h_in = info.height;
  g.w_in = info.width;
  DLAS_CHECK(g.c_in > 0 && g.h_in > 0 && g.w_in > 0, ErrorKind::kInvalidInput, info.name,
             ": empty image shape");
  DLAS_CHECK(p.resize >= 0 && p.crop_h >= 0 && p.crop_w >= 0 && p.pad >= 0 && p.channels >= 0,
             ErrorKind::kInvalidInput, "preprocess: negative resize/crop/pad/channels");
  g.h_rs = g.h_in;
  g.w_rs = g.w_in;
  if (p.resize > 0) {
    // Shorter side to `resize`, the longer one scaled and truncated (torchvision's Resize).
    if (g.h_in <= g.w_in) {
      g.h_rs = p.resize;
      g.w_rs = std::max<int64_t>(1, p.resize * g.w_in / g.h_in);
    } else {
      g.w_rs = p.resize;
      g.h_rs = std::max<int64_t>(1, p.resize * g.h_in / g.w_in);
    }
  }
  g.h_out = p.crop_h > 0 ? p.crop_h : g.h_rs;
  g.w_out = p.crop_w > 0 ? p.crop_w : p.crop_h > 0 ? p.crop_h : g.w_rs;
  g.c_out = p.channels > 0 ? p.channels : g.c_in;
  DLAS_CHECK(g.c_out == g.c_in || g.c_in == 1 || g.c_out == 1, ErrorKind::kInvalidInput,
             "preprocess: cannot convert ", g.c_in, " channels of ", info.name, " to ", g.c_out,
             " (only replicate 1 -> C or average C -> 1)");
  const auto ok = [&](const std::vector<float>& v) {
    return v.size() == 1 || static_cast<int64_t>(v.size()) == g.c_out;
  };
  DLAS_CHECK(ok(p.mean) && ok(p.std), ErrorKind::kInvalidInput, "preprocess: mean/std have ",
             p.mean.size(), "/", p.std.size(), " values for ", g.c_out, " channels");
  for (float s : p.std)
    DLAS_CHECK(s > 0, ErrorKind::kInvalidInput, "preprocess: std values must be > 0");
  return g;
}

}  // namespace

std::vector<int64_t> Preprocess::output_shape(const DatasetInfo& info) const {
  const Geometry g = geometry(*this, info);
  return {g.c_out, g.h_out, g.w_out};
}

void preprocess_image(const Preprocess& p, const DatasetInfo& info, const uint8_t* image,
                      float* out, bool augment, uint64_t draw) {
  const Geometry g = geometry(p, info);
  thread_local std::vector<float> a, b;
  const int64_t plane_in = g.h_in * g.w_in;
  a.resize(static_cast<size_t>(g.c_in * plane_in));
  for (int64_t i = 0; i < g.c_in * plane_in; ++i) a[i] = image[i] * (1.f / 255.f);
  const float* src = a.data();
  if (g.h_rs != g.h_in || g.w_rs != g.w_in) {
    b.resize(static_cast<size_t>(g.c_in * g.h_rs * g.w_rs));
    detail::resize_bilinear(a.data(), g.c_in, g.h_in, g.w_in, b.data(), g.h_rs, g.w_rs);
    src = b.data();
  }
  // Crop window: centred (floor), shifted by the random pad offset when augmenting; pixels
  // outside the image read as 0 (the zero padding, applied before normalization).
  int64_t oy = (g.h_rs - g.h_out) >= 0 ? (g.h_rs - g.h_out) / 2 : -((g.h_out - g.h_rs) / 2);
  int64_t ox = (g.w_rs - g.w_out) >= 0 ? (g.w_rs - g.w_out) / 2 : -((g.w_out - g.w_rs) / 2);
  bool flip = false;
  if (augment) {
    detail::Rng rng(draw);
    if (p.pad > 0) {
      oy += static_cast<int64_t>(rng.below(2 * static_cast<uint64_t>(p.pad) + 1)) - p.pad;
      ox += static_cast<int64_t>(rng.below(2 * static_cast<uint64_t>(p.pad) + 1)) - p.pad;
    }
    if (p.hflip) flip = (rng.next() >> 63) != 0;
  }
  const int64_t plane_rs = g.h_rs * g.w_rs;
  const float inv_cin = 1.f / static_cast<float>(g.c_in);
  for (int64_t c = 0; c < g.c_out; ++c) {
    const float mean = p.mean.size() == 1 ? p.mean[0] : p.mean[c];
    const float inv_std = 1.f / (p.std.size() == 1 ? p.std[0] : p.std[c]);
    float* o = out + c * g.h_out * g.w_out;
    for (int64_t y = 0; y < g.h_out; ++y) {
      const int64_t sy = y + oy;
      for (int64_t x = 0; x < g.w_out; ++x) {
        const int64_t sx = (flip ? g.w_out - 1 - x : x) + ox;
        float v = 0.f;
        if (sy >= 0 && sy < g.h_rs && sx >= 0 && sx < g.w_rs) {
          const int64_t at = sy * g.w_rs + sx;
          if (g.c_in == g.c_out) {
            v = src[c * plane_rs + at];
          } else if (g.c_in == 1) {
            v = src[at];
          } else {  // average to one channel
            for (int64_t ci = 0; ci < g.c_in; ++ci) v += src[ci * plane_rs + at];
            v *= inv_cin;
          }
        }
        o[y * g.w_out + x] = (v - mean) * inv_std;
      }
    }
  }
}

namespace detail {

void resize_bilinear(const float* in, int64_t c, int64_t h, int64_t w, float* out, int64_t oh,
                     int64_t ow) {
  // Source coordinate of an output pixel centre (align_corners = false), clamped at 0 and at
  // the last pixel, as PyTorch's upsample_bilinear2d.
  const auto taps = [](int64_t n_in, int64_t n_out, std::vector<int64_t>& i0,
                       std::vector<int64_t>& i1, std::vector<float>& wt) {
    i0.resize(n_out);
    i1.resize(n_out);
    wt.resize(n_out);
    const double scale = static_cast<double>(n_in) / static_cast<double>(n_out);
    for (int64_t o = 0; o < n_out; ++o) {
      const double s = std::max(0.0, (o + 0.5) * scale - 0.5);
      const int64_t lo = std::min<int64_t>(static_cast<int64_t>(s), n_in - 1);
      i0[o] = lo;
      i1[o] = std::min<int64_t>(lo + 1, n_in - 1);
      wt[o] = static_cast<float>(s - static_cast<double>(lo));
    }
  };
  std::vector<int64_t> y0, y1, x0, x1;
  std::vector<float> wy, wx;
  taps(h, oh, y0, y1, wy);
  taps(w, ow, x0, x1, wx);
  for (int64_t ch = 0; ch < c; ++ch) {
    const float* p = in + ch * h * w;
    float* q = out + ch * oh * ow;
    for (int64_t y = 0; y < oh; ++y) {
      const float* r0 = p + y0[y] * w;
      const float* r1 = p + y1[y] * w;
      for (int64_t x = 0; x < ow; ++x) {
        const float top = r0[x0[x]] + wx[x] * (r0[x1[x]] - r0[x0[x]]);
        const float bot = r1[x0[x]] + wx[x] * (r1[x1[x]] - r1[x0[x]]);
        q[y * ow + x] = top + wy[y] * (bot - top);
      }
    }
  }
}

}  // namespace detail

}  // namespace dlas::data

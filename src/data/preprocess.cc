// Preprocessing of one u8 image: scale, bilinear resize, center crop, random pad-crop and
// flip (training), channel replicate/average and order, normalize, layout; its canonical
// JSON text and the parsers of the flag values.
#include <algorithm>
#include <charconv>
#include <cmath>
#include <nlohmann/json.hpp>

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
    DLAS_CHECK(s > 0 && std::isfinite(s), ErrorKind::kInvalidInput,
               "preprocess: std values must be > 0");
  DLAS_CHECK(p.scale > 0 && std::isfinite(p.scale), ErrorKind::kInvalidInput,
             "preprocess: scale must be > 0");
  return g;
}

}  // namespace

std::vector<int64_t> Preprocess::output_shape(const DatasetInfo& info) const {
  const Geometry g = geometry(*this, info);
  if (layout == InputLayout::kNhwc) return {g.h_out, g.w_out, g.c_out};
  return {g.c_out, g.h_out, g.w_out};
}

void preprocess_image(const Preprocess& p, const DatasetInfo& info, const uint8_t* image,
                      float* out, bool augment, uint64_t draw) {
  const Geometry g = geometry(p, info);
  thread_local std::vector<float> a, b;
  const int64_t plane_in = g.h_in * g.w_in;
  a.resize(static_cast<size_t>(g.c_in * plane_in));
  // A division, not a multiplication by 1/scale: bit-identical to x / 255 as NumPy and
  // PyTorch compute it.
  const float scale = p.scale;
  for (int64_t i = 0; i < g.c_in * plane_in; ++i) a[i] = static_cast<float>(image[i]) / scale;
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
  const bool nhwc = p.layout == InputLayout::kNhwc;
  const bool bgr = p.channel_order == ChannelOrder::kBgr;
  // Output element (c, y, x) is at o[y * row + x * step] with o the channel's origin.
  const int64_t step = nhwc ? g.c_out : 1;
  const int64_t row = g.w_out * step;
  for (int64_t c = 0; c < g.c_out; ++c) {
    const float mean = p.mean.size() == 1 ? p.mean[0] : p.mean[c];
    const float sd = p.std.size() == 1 ? p.std[0] : p.std[c];
    float* o = out + (nhwc ? c : c * g.h_out * g.w_out);
    const int64_t sc = bgr ? g.c_out - 1 - c : c;  // the source channel
    for (int64_t y = 0; y < g.h_out; ++y) {
      const int64_t sy = y + oy;
      for (int64_t x = 0; x < g.w_out; ++x) {
        const int64_t sx = (flip ? g.w_out - 1 - x : x) + ox;
        float v = 0.f;
        if (sy >= 0 && sy < g.h_rs && sx >= 0 && sx < g.w_rs) {
          const int64_t at = sy * g.w_rs + sx;
          if (g.c_in == g.c_out) {
            v = src[sc * plane_rs + at];
          } else if (g.c_in == 1) {
            v = src[at];
          } else {  // average to one channel
            for (int64_t ci = 0; ci < g.c_in; ++ci) v += src[ci * plane_rs + at];
            v *= inv_cin;
          }
        }
        o[y * row + x * step] = (v - mean) / sd;
      }
    }
  }
}

const char* input_layout_name(InputLayout l) {
  return l == InputLayout::kNhwc ? "nhwc" : "nchw";
}

const char* channel_order_name(ChannelOrder c) { return c == ChannelOrder::kBgr ? "bgr" : "rgb"; }

namespace {

// The shortest text that reads back as the same float ("0.286", "255").
std::string float_text(float v) {
  char buf[32];
  const auto r = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, r.ptr);
}

std::string float_list(const std::vector<float>& v, const char* sep) {
  std::string s;
  for (float x : v) s += (s.empty() ? "" : sep) + float_text(x);
  return s;
}

bool is_constant(const std::vector<float>& v, float c) {
  return std::all_of(v.begin(), v.end(), [c](float x) { return x == c; });
}

}  // namespace

std::string Preprocess::describe() const {
  std::string s = "x/" + float_text(scale);
  if (!is_constant(mean, 0.f) || !is_constant(std, 1.f))
    s += ", mean " + float_list(mean, ",") + ", std " + float_list(std, ",");
  else
    s += " (no normalisation)";
  if (resize > 0) s += ", resize " + std::to_string(resize);
  if (crop_h > 0) s += ", center crop " + std::to_string(crop_h) + "x" +
                       std::to_string(crop_w > 0 ? crop_w : crop_h);
  if (channel_order == ChannelOrder::kBgr) s += ", bgr";
  if (layout == InputLayout::kNhwc) s += ", nhwc";
  return s;
}

std::string preprocess_to_json(const Preprocess& p) {
  return str("{\"scale\":", float_text(p.scale), ",\"mean\":[", float_list(p.mean, ","),
             "],\"std\":[", float_list(p.std, ","), "],\"channel_order\":\"",
             channel_order_name(p.channel_order), "\",\"layout\":\"", input_layout_name(p.layout),
             "\",\"resize\":", p.resize, ",\"crop\":[", p.crop_h, ",",
             p.crop_w > 0 ? p.crop_w : p.crop_h, "]}");
}

Preprocess preprocess_from_json(std::string_view text, Preprocess p) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception&) {
    fail(ErrorKind::kInvalidInput, "not valid JSON");
  }
  DLAS_CHECK(j.is_object(), ErrorKind::kInvalidInput, "not a JSON object");
  const auto number = [&](const char* key, const nlohmann::json& v) {
    DLAS_CHECK(v.is_number(), ErrorKind::kInvalidInput, "'", key, "' must be a number");
    return v.get<double>();
  };
  const auto values = [&](const char* key) {
    const nlohmann::json& v = j[key];
    std::vector<float> out;
    if (v.is_number()) {
      out.push_back(static_cast<float>(v.get<double>()));
    } else {
      DLAS_CHECK(v.is_array() && !v.empty(), ErrorKind::kInvalidInput, "'", key,
                 "' must be a number or a non-empty list of numbers");
      for (const auto& x : v) out.push_back(static_cast<float>(number(key, x)));
    }
    return out;
  };
  const auto whole = [&](const char* key, const nlohmann::json& v) {
    const double d = number(key, v);
    DLAS_CHECK(d >= 0 && d <= 1e6 && d == std::floor(d), ErrorKind::kInvalidInput, "'", key,
               "' must be a whole number >= 0");
    return static_cast<int>(d);
  };
  const auto name = [&](const char* key) {
    DLAS_CHECK(j[key].is_string(), ErrorKind::kInvalidInput, "'", key, "' must be a string");
    return j[key].get<std::string>();
  };
  if (j.contains("scale")) {
    p.scale = static_cast<float>(number("scale", j["scale"]));
    DLAS_CHECK(p.scale > 0 && std::isfinite(p.scale), ErrorKind::kInvalidInput,
               "'scale' must be > 0");
  }
  if (j.contains("mean")) p.mean = values("mean");
  if (j.contains("std")) {
    p.std = values("std");
    for (float s : p.std)
      DLAS_CHECK(s > 0 && std::isfinite(s), ErrorKind::kInvalidInput, "'std' must be > 0");
  }
  if (j.contains("channel_order")) {
    const std::string v = name("channel_order");
    DLAS_CHECK(v == "rgb" || v == "bgr", ErrorKind::kInvalidInput, "'channel_order' is '", v,
               "' (rgb or bgr)");
    p.channel_order = v == "bgr" ? ChannelOrder::kBgr : ChannelOrder::kRgb;
  }
  if (j.contains("layout")) {
    const std::string v = name("layout");
    DLAS_CHECK(v == "nchw" || v == "nhwc", ErrorKind::kInvalidInput, "'layout' is '", v,
               "' (nchw or nhwc)");
    p.layout = v == "nhwc" ? InputLayout::kNhwc : InputLayout::kNchw;
  }
  if (j.contains("resize")) p.resize = whole("resize", j["resize"]);
  if (j.contains("crop")) {
    const nlohmann::json& c = j["crop"];
    if (c.is_number()) {
      p.crop_h = p.crop_w = whole("crop", c);
    } else {
      DLAS_CHECK(c.is_array() && c.size() == 2, ErrorKind::kInvalidInput,
                 "'crop' must be [height, width]");
      p.crop_h = whole("crop", c[0]);
      p.crop_w = whole("crop", c[1]);
    }
  }
  return p;
}

std::vector<float> parse_channel_values(std::string_view text) {
  std::vector<float> out;
  size_t at = 0;
  while (true) {
    const size_t comma = text.find(',', at);
    std::string_view part = text.substr(at, comma == std::string_view::npos ? comma : comma - at);
    while (!part.empty() && part.front() == ' ') part.remove_prefix(1);
    while (!part.empty() && part.back() == ' ') part.remove_suffix(1);
    float v = 0;
    const auto r = std::from_chars(part.data(), part.data() + part.size(), v);
    DLAS_CHECK(!part.empty() && r.ec == std::errc() && r.ptr == part.data() + part.size() &&
                   std::isfinite(v),
               ErrorKind::kInvalidInput, "'", text, "' is not a number or a comma-separated list",
               " of numbers");
    out.push_back(v);
    if (comma == std::string_view::npos) break;
    at = comma + 1;
  }
  return out;
}

ChannelOrder parse_channel_order(std::string_view text) {
  if (text == "rgb") return ChannelOrder::kRgb;
  if (text == "bgr") return ChannelOrder::kBgr;
  fail(ErrorKind::kInvalidInput, "unknown channel order '", text, "' (rgb or bgr)");
}

InputLayout parse_input_layout(std::string_view text) {
  if (text == "nchw") return InputLayout::kNchw;
  if (text == "nhwc") return InputLayout::kNhwc;
  fail(ErrorKind::kInvalidInput, "unknown input layout '", text, "' (nchw or nhwc)");
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

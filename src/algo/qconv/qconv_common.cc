// QuantParams / QConvProblem, the int8 integer oracle, the one list and the auto rule.
#include <cmath>
#include <string>

#include "algo/qconv/qconv_common.h"
#include "dlas/algo/qconv.h"
#include "dlas/core/error.h"

namespace dlas {

#define X(accessor) const QConvAlgorithm& accessor();
#include "algo/qconv/qconv_algorithms.inc"
#undef X

void QuantParams::validate(const char* what) const {
  DLAS_CHECK(type == DType::kU8 || type == DType::kS8, ErrorKind::kInvalidInput, what,
             ": quantized type must be u8 or s8, got ", dtype_name(type));
  DLAS_CHECK(std::isfinite(scale) && scale > 0.f, ErrorKind::kInvalidInput, what,
             ": scale must be finite and > 0, got ", scale);
  DLAS_CHECK(zero_point >= lowest() && zero_point <= highest(), ErrorKind::kInvalidInput, what,
             ": zero point ", zero_point, " is outside the ", dtype_name(type), " range");
}

float requant_multiplier(float a_scale, float b_scale, float c_scale) {
  return static_cast<float>(static_cast<double>(a_scale) * static_cast<double>(b_scale) /
                            static_cast<double>(c_scale));
}

namespace {
int32_t round_to_int(float v) { return static_cast<int32_t>(std::nearbyint(v)); }
}  // namespace

int32_t QConvProblem::out_lo() const {
  int32_t lo = y.lowest();
  const Activation a = conv.epilogue.act;
  if (a == Activation::kRelu) lo = std::max(lo, y.zero_point);
  if (a == Activation::kClip) {
    const float q = std::nearbyint(conv.epilogue.p0 / y.scale);
    if (q > static_cast<float>(lo - y.zero_point))
      lo = q >= static_cast<float>(y.highest() - y.zero_point) ? y.highest()
                                                               : y.zero_point + round_to_int(q);
  }
  return lo;
}

int32_t QConvProblem::out_hi() const {
  int32_t hi = y.highest();
  if (conv.epilogue.act == Activation::kClip) {
    const float q = std::nearbyint(conv.epilogue.p1 / y.scale);
    if (q < static_cast<float>(hi - y.zero_point))
      hi = q <= static_cast<float>(y.lowest() - y.zero_point) ? y.lowest()
                                                              : y.zero_point + round_to_int(q);
  }
  return hi;
}

void QConvProblem::validate() const {
  conv.validate();
  DLAS_CHECK(conv.epilogue.is_clamp(), ErrorKind::kUnsupported, "int8 conv ", conv.key(),
             ": only relu / clip activations fuse into an int8 conv, not ",
             activation_name(conv.epilogue.act));
  x.validate("int8 conv input");
  y.validate("int8 conv output");
  if (conv.epilogue.residual) r.validate("int8 conv residual");
  const double worst = static_cast<double>(conv.c_per_group() * conv.kh * conv.kw) * 255.0 * 128.0;
  DLAS_CHECK(worst < 1073741824.0, ErrorKind::kUnsupported, "int8 conv ", conv.key(),
             ": reduction of ", conv.c_per_group() * conv.kh * conv.kw,
             " may overflow the int32 accumulator");
  DLAS_CHECK(out_lo() <= out_hi(), ErrorKind::kInvalidInput, "int8 conv ", conv.key(),
             ": the activation's clamp range is empty at the output scale");
}

std::string QConvProblem::key() const {
  std::string s = conv.key() + "_" + dtype_name(x.type) + "s8" + dtype_name(y.type);
  if (conv.epilogue.residual) s += std::string("_r") + dtype_name(r.type);
  return s;
}

namespace {
int32_t load_q(const void* base, DType t, int64_t i) {
  return t == DType::kU8 ? static_cast<const uint8_t*>(base)[i]
                         : static_cast<const int8_t*>(base)[i];
}
}  // namespace

void reference_qconv_plane(const QConvProblem& p, const void* x, const int8_t* w, float m,
                           int32_t bias, const void* residual, void* y, int64_t n, int64_t k) {
  const ConvProblem& c = p.conv;
  const int64_t oh = c.oh(), ow = c.ow(), cg = c.c_per_group(), g = k / c.k_per_group();
  const int32_t lo = p.out_lo(), hi = p.out_hi();
  const float vlo = static_cast<float>(lo - p.y.zero_point);
  const float vhi = static_cast<float>(hi - p.y.zero_point);
  const float rm = c.epilogue.residual ? requant_multiplier(p.r.scale, 1.f, p.y.scale) : 0.f;
  for (int64_t oy = 0; oy < oh; ++oy)
    for (int64_t ox = 0; ox < ow; ++ox) {
      int32_t acc = bias;
      for (int64_t ci = 0; ci < cg; ++ci)
        for (int64_t ky = 0; ky < c.kh; ++ky) {
          const int64_t iy = oy * c.stride_h - c.pad_t + ky * c.dil_h;
          if (iy < 0 || iy >= c.h) continue;
          for (int64_t kx = 0; kx < c.kw; ++kx) {
            const int64_t ix = ox * c.stride_w - c.pad_l + kx * c.dil_w;
            if (ix < 0 || ix >= c.w) continue;
            const int64_t xi = ((n * c.c + g * cg + ci) * c.h + iy) * c.w + ix;
            const int32_t xv = load_q(x, p.x.type, xi) - p.x.zero_point;
            acc += xv * static_cast<int32_t>(w[(ci * c.kh + ky) * c.kw + kx]);
          }
        }
      const int64_t yi = ((n * c.k + k) * oh + oy) * ow + ox;
      float t = 0.f;
      if (c.epilogue.residual)
        t = static_cast<float>(load_q(residual, p.r.type, yi) - p.r.zero_point) * rm;
      float v = std::fmaf(static_cast<float>(acc), m, t);
      v = std::fmin(std::fmax(v, vlo), vhi);
      const int32_t q = round_to_int(v) + p.y.zero_point;
      if (p.y.type == DType::kU8)
        static_cast<uint8_t*>(y)[yi] = static_cast<uint8_t>(q);
      else
        static_cast<int8_t*>(y)[yi] = static_cast<int8_t>(q);
    }
}

void reference_qconv(const QConvProblem& p, const void* x, const int8_t* w, const float* w_scale,
                     const int32_t* bias, const void* residual, void* y) {
  p.validate();
  const ConvProblem& c = p.conv;
  const int64_t per_k = c.c_per_group() * c.kh * c.kw;
  for (int64_t n = 0; n < c.n; ++n)
    for (int64_t k = 0; k < c.k; ++k)
      reference_qconv_plane(p, x, w + k * per_k,
                            requant_multiplier(p.x.scale, w_scale[k], p.y.scale),
                            bias ? bias[k] : 0, residual, y, n, k);
}

const std::vector<const QConvAlgorithm*>& qconv_algorithms() {
  static const std::vector<const QConvAlgorithm*> list = {
#define X(accessor) &accessor(),
#include "algo/qconv/qconv_algorithms.inc"
#undef X
  };
  return list;
}

const QConvAlgorithm* find_qconv_algorithm(std::string_view name) {
  for (const QConvAlgorithm* a : qconv_algorithms())
    if (a->name() == name) return a;
  return nullptr;
}

// Measured on AVX2 (Zen 3, 2 threads, dlas_bench_qconv; README "int8 kernels"): on
// KxK convs with >= 16 input channels per group the register-tiled algorithms beat gemm's
// im2col -- direct (image packed once) on stride-1 convs (equal to spatial-pack within
// noise on 4x4 and smaller maps, up to 1.2x ahead on 14x14 .. 56x56), spatial-pack (tiles
// packed in L1: no image columns skipped by the stride are packed) on strided ones; 1x1 convs (gemm
// packs each pixel's channels once, the tiled layouts stream the image per tile), stems with few
// channels and grouped convs stay on gemm. On the AMX path gemm (AMX tiles) keeps every layer: the
// tiled algorithms have no AMX kernels and were not measured there.
const QConvAlgorithm& auto_qconv_algorithm(const QConvProblem& p, Isa isa) {
  const ConvProblem& c = p.conv;
  const QConvAlgorithm* depthwise = find_qconv_algorithm("depthwise");
  if (depthwise && depthwise->supports(p)) return *depthwise;
  const char* name = "gemm";
  if (isa != Isa::kAmx && c.groups == 1 && c.kh * c.kw > 1 && c.c_per_group() >= 16) {
    name = c.stride_h == 1 && c.stride_w == 1 ? "direct" : "spatial-pack";
  }
  const QConvAlgorithm* a = find_qconv_algorithm(name);
  if (a && a->supports(p)) return *a;
  for (const QConvAlgorithm* any : qconv_algorithms())
    if (any->supports(p)) return *any;
  fail(ErrorKind::kUnsupported, "no int8 convolution algorithm supports ", p.key());
}

namespace qconv_detail {

ChannelTerms channel_terms(const QConvProblem& p, const int8_t* w, const float* w_scale,
                           const int32_t* bias) {
  const ConvProblem& c = p.conv;
  const int64_t per_k = c.c_per_group() * c.kh * c.kw;
  const int64_t zp = stored_zero_point(p.x);
  ChannelTerms t;
  t.init.resize(static_cast<size_t>(c.k));
  t.mult.resize(static_cast<size_t>(c.k));
  for (int64_t k = 0; k < c.k; ++k) {
    int64_t sum = 0;
    for (int64_t i = 0; i < per_k; ++i) sum += w[k * per_k + i];
    const int64_t init = (bias ? bias[k] : 0) - zp * sum;
    t.init[k] = static_cast<int32_t>(static_cast<uint32_t>(init));  // wraps like the kernels
    t.mult[k] = requant_multiplier(p.x.scale, w_scale[k], p.y.scale);
  }
  return t;
}

ukernel::QS8GemmParams base_params(const QConvProblem& p) {
  ukernel::QS8GemmParams prm{};
  prm.vlo = static_cast<float>(p.out_lo() - p.y.zero_point);
  prm.vhi = static_cast<float>(p.out_hi() - p.y.zero_point);
  prm.y_zp = p.y.zero_point;
  prm.y_signed = p.y.type == DType::kS8;
  prm.r_signed = p.r.type == DType::kS8;
  prm.r_zp = p.r.zero_point;
  prm.rm = p.conv.epilogue.residual ? requant_multiplier(p.r.scale, 1.f, p.y.scale) : 0.f;
  return prm;
}

}  // namespace qconv_detail

}  // namespace dlas

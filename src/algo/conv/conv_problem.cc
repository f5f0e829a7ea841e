#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>

#include "algo/conv/conv_impl.h"
#include "dlas/algo/conv.h"
#include "dlas/core/error.h"

namespace dlas {

const char* activation_name(Activation a) {
  switch (a) {
    case Activation::kNone:
      return "none";
    case Activation::kRelu:
      return "relu";
    case Activation::kClip:
      return "clip";
    case Activation::kSigmoid:
      return "sigmoid";
    case Activation::kSilu:
      return "silu";
    case Activation::kHardSigmoid:
      return "hardsigmoid";
    case Activation::kHardSwish:
      return "hardswish";
    case Activation::kErf:
      return "erf";
    case Activation::kGelu:
      return "gelu";
  }
  return "?";
}

Activation parse_activation(std::string_view name) {
  for (Activation a : {Activation::kNone, Activation::kRelu, Activation::kClip,
                       Activation::kSigmoid, Activation::kSilu, Activation::kHardSigmoid,
                       Activation::kHardSwish, Activation::kErf, Activation::kGelu})
    if (name == activation_name(a)) return a;
  fail(ErrorKind::kInvalidInput, "unknown activation '", name, "'");
}

Epilogue epilogue_from_attrs(std::string_view activation, const std::vector<float>& params) {
  Epilogue e;
  e.act = parse_activation(activation);
  if (params.size() == 2) e.p0 = params[0], e.p1 = params[1];
  if (e.act == Activation::kGelu) e.p0 = static_cast<float>(std::sqrt(2.0));
  return e;
}

float Epilogue::clamp_min() const {
  if (act == Activation::kRelu) return 0.f;
  if (act == Activation::kClip) return p0;
  return -std::numeric_limits<float>::infinity();
}

float Epilogue::clamp_max() const {
  if (act == Activation::kClip) return p1;
  return std::numeric_limits<float>::infinity();
}

const char* conv_types_name(ConvTypes t) {
  switch (t) {
    case ConvTypes::kF32:
      return "f32";
    case ConvTypes::kInt8:
      return "int8";
    case ConvTypes::kHalf:
      return "16-bit";
  }
  return "?";
}

const char* conv_compute_name(ConvCompute c) {
  switch (c) {
    case ConvCompute::kF32:
      return "f32";
    case ConvCompute::kInt8:
      return "int8";
    case ConvCompute::kEmulated:
      return "emulated";
    case ConvCompute::kF32On16Bit:
      return "f32-on-16bit";
    case ConvCompute::kNativeFp16:
      return "native-fp16";
    case ConvCompute::kNativeBf16:
      return "native-bf16";
    case ConvCompute::kAmxInt8:
      return "amx-int8";
    case ConvCompute::kAmxBf16:
      return "amx-bf16";
  }
  return "?";
}

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

ConvProblem& ConvProblem::set_half(DType t) {
  DLAS_CHECK(t == DType::kF16 || t == DType::kBF16, ErrorKind::kInvalidInput, "conv ", key(),
             ": a 16-bit type must be f16 or bf16, got ", dtype_name(t));
  x_type = w_type = y_type = t;
  quant = {};
  return *this;
}

ConvProblem& ConvProblem::set_int8(const QuantParams& x, const QuantParams& y,
                                   const QuantParams& r) {
  quant = {x, y, r};
  x_type = x.type;
  w_type = DType::kS8;
  y_type = y.type;
  return *this;
}

ConvProblem ConvProblem::as_f32() const {
  ConvProblem p = *this;
  p.x_type = p.w_type = p.y_type = DType::kF32;
  p.quant = {};
  return p;
}

ConvTypes ConvProblem::types() const {
  if (w_type == DType::kS8) return ConvTypes::kInt8;
  if (w_type == DType::kF16 || w_type == DType::kBF16) return ConvTypes::kHalf;
  return ConvTypes::kF32;
}

namespace {
int32_t round_to_int(float v) { return static_cast<int32_t>(std::nearbyint(v)); }
}  // namespace

int32_t ConvProblem::out_lo() const {
  const QuantParams& y = quant.y;
  int32_t lo = y.lowest();
  if (epilogue.act == Activation::kRelu) lo = std::max(lo, y.zero_point);
  if (epilogue.act == Activation::kClip) {
    const float q = std::nearbyint(epilogue.p0 / y.scale);
    if (q > static_cast<float>(lo - y.zero_point))
      lo = q >= static_cast<float>(y.highest() - y.zero_point) ? y.highest()
                                                               : y.zero_point + round_to_int(q);
  }
  return lo;
}

int32_t ConvProblem::out_hi() const {
  const QuantParams& y = quant.y;
  int32_t hi = y.highest();
  if (epilogue.act == Activation::kClip) {
    const float q = std::nearbyint(epilogue.p1 / y.scale);
    if (q < static_cast<float>(hi - y.zero_point))
      hi = q <= static_cast<float>(y.lowest() - y.zero_point) ? y.lowest()
                                                              : y.zero_point + round_to_int(q);
  }
  return hi;
}

namespace {

void validate_int8(const ConvProblem& p) {
  const std::string key = p.key();
  DLAS_CHECK(p.quant.x.type == p.x_type && p.quant.y.type == p.y_type, ErrorKind::kInvalidInput,
             "int8 conv ", key, ": input/output types disagree with their quantization");
  DLAS_CHECK(p.epilogue.is_clamp(), ErrorKind::kUnsupported, "int8 conv ", key,
             ": only relu / clip activations fuse into an int8 conv, not ",
             activation_name(p.epilogue.act));
  p.quant.x.validate("int8 conv input");
  p.quant.y.validate("int8 conv output");
  if (p.epilogue.residual) p.quant.r.validate("int8 conv residual");
  const int64_t r = p.c_per_group() * p.kh * p.kw;
  DLAS_CHECK(static_cast<double>(r) * 255.0 * 128.0 < 1073741824.0, ErrorKind::kUnsupported,
             "int8 conv ", key, ": reduction of ", r, " may overflow the int32 accumulator");
  DLAS_CHECK(p.out_lo() <= p.out_hi(), ErrorKind::kInvalidInput, "int8 conv ", key,
             ": the activation's clamp range is empty at the output scale");
}

}  // namespace

void ConvProblem::validate() const {
  DLAS_CHECK(n > 0 && c > 0 && h > 0 && w > 0 && k > 0 && kh > 0 && kw > 0,
             ErrorKind::kInvalidInput, "conv ", key(), ": sizes must be positive");
  DLAS_CHECK(stride_h > 0 && stride_w > 0 && dil_h > 0 && dil_w > 0, ErrorKind::kInvalidInput,
             "conv ", key(), ": strides and dilations must be positive");
  DLAS_CHECK(pad_t >= 0 && pad_l >= 0 && pad_b >= 0 && pad_r >= 0, ErrorKind::kInvalidInput,
             "conv ", key(), ": pads must be non-negative");
  DLAS_CHECK(groups > 0 && c % groups == 0 && k % groups == 0, ErrorKind::kInvalidInput, "conv ",
             key(), ": groups must divide input and output channels");
  DLAS_CHECK(oh() > 0 && ow() > 0, ErrorKind::kInvalidInput, "conv ", key(),
             ": the output is empty");
  switch (types()) {
    case ConvTypes::kF32:
      DLAS_CHECK(x_type == DType::kF32 && w_type == DType::kF32 && y_type == DType::kF32,
                 ErrorKind::kInvalidInput, "conv ", key(), ": types ", dtype_name(x_type), "/",
                 dtype_name(w_type), "/", dtype_name(y_type),
                 " are none of f32, int8 (u8|s8/s8/u8|s8), f16 or bf16");
      break;
    case ConvTypes::kHalf:
      DLAS_CHECK(x_type == w_type && y_type == w_type, ErrorKind::kInvalidInput, "16-bit conv ",
                 key(), ": input, weights and output must share one type");
      break;
    case ConvTypes::kInt8:
      validate_int8(*this);
      break;
  }
  if (is_blocked()) {
    DLAS_CHECK(types() != ConvTypes::kHalf || y_layout == Layout::kNchw16c, ErrorKind::kUnsupported,
               "conv ", key(),
               ": blocked layouts are f32 and int8 (nchw8c, nchw16c) and 16-bit (nchw16c)");
    DLAS_CHECK(!dlas::is_blocked(x_layout) || x_layout == y_layout, ErrorKind::kInvalidInput,
               "conv ", key(), ": a blocked input needs an output of the same block");
  }
}

std::string ConvProblem::key() const {
  char buf[192];
  std::snprintf(
      buf, sizeof buf,
      "c%lld_h%lld_w%lld_k%lld_%lldx%lld_s%lldx%lld_p%lldx%lldx%lldx%lld_d%lldx%lld_g%lld",
      (long long)c, (long long)h, (long long)w, (long long)k, (long long)kh, (long long)kw,
      (long long)stride_h, (long long)stride_w, (long long)pad_t, (long long)pad_l,
      (long long)pad_b, (long long)pad_r, (long long)dil_h, (long long)dil_w, (long long)groups);
  std::string s = buf;
  if (n != 1) s += "_n" + std::to_string(n);
  switch (types()) {
    case ConvTypes::kF32:
      break;
    case ConvTypes::kInt8:
      s += std::string("_") + dtype_name(x_type) + "s8" + dtype_name(y_type);
      if (epilogue.residual) s += std::string("_r") + dtype_name(quant.r.type);
      break;
    case ConvTypes::kHalf:
      s += std::string("_") + dtype_name(w_type);
      break;
  }
  if (is_blocked()) {
    s += std::string("_") + layout_name(x_layout);
    if (y_layout != x_layout) s += std::string("_") + layout_name(y_layout);
  }
  return s;
}

ConvProblem ConvProblem::from_key(std::string_view key) {
  ConvProblem p;
  long long v[15] = {};
  long long batch = 1;
  const std::string s(key);
  int used = 0;
  const int got = std::sscanf(
      s.c_str(),
      "c%lld_h%lld_w%lld_k%lld_%lldx%lld_s%lldx%lld_p%lldx%lldx%lldx%lld_d%lldx%lld_g%lld%n", &v[0],
      &v[1], &v[2], &v[3], &v[4], &v[5], &v[6], &v[7], &v[8], &v[9], &v[10], &v[11], &v[12], &v[13],
      &v[14], &used);
  DLAS_CHECK(got == 15, ErrorKind::kInvalidInput, "conv shape key '", key,
             "': expected "
             "c<C>_h<H>_w<W>_k<K>_<KH>x<KW>_s<SH>x<SW>_p<T>x<L>x<B>x<R>_d<DH>x<DW>_g<G>[_n<N>]");
  if (static_cast<size_t>(used) < s.size()) {
    int used2 = 0;
    DLAS_CHECK(std::sscanf(s.c_str() + used, "_n%lld%n", &batch, &used2) == 1 &&
                   static_cast<size_t>(used + used2) == s.size(),
               ErrorKind::kInvalidInput, "conv shape key '", key, "': trailing text");
  }
  p.c = v[0], p.h = v[1], p.w = v[2], p.k = v[3], p.kh = v[4], p.kw = v[5];
  p.stride_h = v[6], p.stride_w = v[7], p.pad_t = v[8], p.pad_l = v[9], p.pad_b = v[10],
  p.pad_r = v[11], p.dil_h = v[12], p.dil_w = v[13], p.groups = v[14], p.n = batch;
  p.validate();
  return p;
}

bool split_spatially(int64_t out_pixels, int64_t activation_bytes, int64_t weight_bytes) {
  static const int forced = [] {
    const char* v = std::getenv("DLAS_SPLIT");
    if (v && std::strcmp(v, "spatial") == 0) return 1;
    if (v && std::strcmp(v, "channels") == 0) return 0;
    return -1;
  }();
  if (forced >= 0) return forced == 1;
  return out_pixels >= kSpatialSplitPixels && weight_bytes <= 2 * activation_bytes;
}

}  // namespace dlas

#include <charconv>
#include <cstdio>
#include <limits>

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
  }
  return "?";
}

Activation parse_activation(std::string_view name) {
  for (Activation a :
       {Activation::kNone, Activation::kRelu, Activation::kClip, Activation::kSigmoid,
        Activation::kSilu, Activation::kHardSigmoid, Activation::kHardSwish})
    if (name == activation_name(a)) return a;
  fail(ErrorKind::kInvalidInput, "unknown activation '", name, "'");
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

}  // namespace dlas

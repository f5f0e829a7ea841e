// HConvProblem, the 16-bit oracle, the one list and the auto rule.
#include <string>

#include "algo/microkernels/f32_vepilogue.h"
#include "algo/microkernels/h16_gemm.h"
#include "dlas/algo/hconv.h"
#include "dlas/core/error.h"

namespace dlas {

#define X(accessor) const HConvAlgorithm& accessor();
#include "algo/hconv/hconv_algorithms.inc"
#undef X

const char* half_compute_name(HalfCompute c) {
  switch (c) {
    case HalfCompute::kEmulated:
      return "emulated";
    case HalfCompute::kNativeFp16:
      return "native-fp16";
    case HalfCompute::kNativeBf16:
      return "native-bf16";
    case HalfCompute::kAmxBf16:
      return "amx-bf16";
  }
  return "?";
}

void HConvProblem::validate() const {
  conv.validate();
  DLAS_CHECK(type == DType::kF16 || type == DType::kBF16, ErrorKind::kInvalidInput, "16-bit conv ",
             conv.key(), ": type must be f16 or bf16, got ", dtype_name(type));
}

std::string HConvProblem::key() const { return conv.key() + "_" + dtype_name(type); }

void reference_hconv(const HConvProblem& p, const uint16_t* x, const uint16_t* weights,
                     const float* bias, const uint16_t* residual, uint16_t* y) {
  p.validate();
  const ConvProblem& c = p.conv;
  const bool f16 = p.type == DType::kF16;
  auto widen = [f16](uint16_t v) { return f16 ? f16_to_f32(v) : bf16_to_f32(v); };
  const int64_t oh = c.oh(), ow = c.ow(), cg = c.c_per_group(), kg = c.k_per_group();
  for (int64_t n = 0; n < c.n; ++n)
    for (int64_t k = 0; k < c.k; ++k) {
      const int64_t g = k / kg;
      const uint16_t* wk = weights + k * cg * c.kh * c.kw;
      for (int64_t oy = 0; oy < oh; ++oy)
        for (int64_t ox = 0; ox < ow; ++ox) {
          double acc = 0;
          for (int64_t ci = 0; ci < cg; ++ci)
            for (int64_t ky = 0; ky < c.kh; ++ky) {
              const int64_t iy = oy * c.stride_h - c.pad_t + ky * c.dil_h;
              if (iy < 0 || iy >= c.h) continue;
              for (int64_t kx = 0; kx < c.kw; ++kx) {
                const int64_t ix = ox * c.stride_w - c.pad_l + kx * c.dil_w;
                if (ix < 0 || ix >= c.w) continue;
                acc +=
                    static_cast<double>(widen(x[((n * c.c + g * cg + ci) * c.h + iy) * c.w + ix])) *
                    static_cast<double>(widen(wk[(ci * c.kh + ky) * c.kw + kx]));
              }
            }
          const int64_t yi = ((n * c.k + k) * oh + oy) * ow + ox;
          float v = static_cast<float>(acc);
          float r = 0.f;
          if (c.epilogue.residual) r = widen(residual[yi]);
          ukernel::f32_vepilogue__scalar(1, &v, bias ? bias[k] : 0.f,
                                         c.epilogue.residual ? &r : nullptr, c.epilogue.act,
                                         c.epilogue.p0, c.epilogue.p1);
          y[yi] = f16 ? f32_to_f16(v) : f32_to_bf16(v);
        }
    }
}

const std::vector<const HConvAlgorithm*>& hconv_algorithms() {
  static const std::vector<const HConvAlgorithm*> list = {
#define X(accessor) &accessor(),
#include "algo/hconv/hconv_algorithms.inc"
#undef X
  };
  return list;
}

const HConvAlgorithm* find_hconv_algorithm(std::string_view name) {
  for (const HConvAlgorithm* a : hconv_algorithms())
    if (a->name() == name) return a;
  return nullptr;
}

// Where the active path has no half arithmetic for the type, every algorithm computes in
// f32 after widening, so the f32 rule's choice is the right one. Where it has (AVX512-FP16
// for f16, AVX512-BF16 for bf16), only gemm runs native half arithmetic: it takes every
// layer but depthwise ones (memory-bound) and stems (<= 4 input channels per group, where
// the f32 rule picks direct because im2col dominates).
const HConvAlgorithm& auto_hconv_algorithm(const HConvProblem& p) {
  auto pick = [&](std::string_view name) -> const HConvAlgorithm* {
    const HConvAlgorithm* a = find_hconv_algorithm(name);
    return a && a->supports(p) ? a : nullptr;
  };
  const ConvProblem& c = p.conv;
  const HConvAlgorithm* a = nullptr;
  if (!ukernel::h16_gemm_ukernels_for(p.type, active_isa()).empty()) {
    if (c.is_depthwise()) a = pick("depthwise");
    if (!a && c.c_per_group() <= 4) a = pick("direct");
    if (!a) a = pick("gemm");
  } else {
    a = pick(auto_conv_algorithm(c).name());
  }
  if (!a) a = pick("gemm");
  DLAS_CHECK(a != nullptr, ErrorKind::kUnsupported, "no 16-bit convolution algorithm supports ",
             p.key());
  return *a;
}

}  // namespace dlas

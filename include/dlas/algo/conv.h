// The convolution operator (DLAS layer 4), one for every element type. One ConvProblem
// (shapes, stride, padding, dilation, groups, fused epilogue, and the element types of
// input, weights and output with their quantization) can be computed by several
// algorithms -- direct, GEMM (im2col), spatial pack, Winograd, depthwise, and the sparse
// ones -- each publishing its knob space and untuned default, packing weights once
// (prepare) and running with no allocation. Activations are NCHW or blocked NCHWc
// (ConvProblem::x_layout / y_layout, dlas/algo/layout.h): f32 in nchw8c or nchw16c, f16 /
// bf16 in nchw16c, int8 (u8 / s8) in nchw16c or nchw8c; an algorithm implements the blocked layouts
// in its own files (<algo>_nchwc_f32.cc, <algo>_nchwc_h16.cc, <algo>_nchwc_qs8.cc) and may pack
// into any layout internally.
//
// Element types (ConvProblem::x_type / w_type / y_type):
//   - f32: everything f32;
//   - int8: u8 or s8 activations with per-tensor quantization (ConvProblem::quant), s8
//     weights with per-output-channel scales, s32 bias; the arithmetic is exact and
//     specified in dlas/algo/qconv.h;
//   - 16-bit: f16 or bf16 input, weights, residual and output, f32 bias; the arithmetic
//     and its compute paths (emulated, native) are specified in dlas/algo/hconv.h.
// Each algorithm implements the types it supports in its own files, side by side
// (src/algo/conv/<algo>_f32.cc, <algo>_qs8.cc, <algo>_h16.cc); the one list
// (src/algo/conv/conv_algorithms.inc) names them per row, and one auto rule picks among
// them for every type.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "dlas/algo/knobs.h"
#include "dlas/algo/layout.h"
#include "dlas/core/dtype.h"
#include "dlas/hw/isa.h"

namespace dlas {

class ThreadPool;

// Activations fused into a producing op (applied after bias and residual add).
enum class Activation : int {
  kNone,
  kRelu,         // max(x, 0)
  kClip,         // min(max(x, p0), p1); ReLU6 is Clip(0, 6)
  kSigmoid,      // 1 / (1 + exp(-x))
  kSilu,         // x * sigmoid(x) (Swish)
  kHardSigmoid,  // max(0, min(1, p0 * x + p1))  (ONNX alpha, beta)
  kHardSwish,    // x * max(0, min(1, x / 6 + 1/2))
  kErf,          // erf(x): the ONNX Erf of a decomposed GELU, 0.5 x (1 + erf(x / sqrt 2))
  kGelu,         // (x * (erf(x / p0) + 1)) * 0.5 with p0 = sqrt 2: ONNX Gelu, and the
                 // decomposed one fused (fuse_gelu), in its operations' order
};
const char* activation_name(Activation a);
// Inverse of activation_name (the FusedConv `activation` attribute); throws kInvalidInput.
Activation parse_activation(std::string_view name);

struct Epilogue {
  Activation act = Activation::kNone;
  float p0 = 0.f, p1 = 0.f;  // Clip min/max, HardSigmoid alpha/beta
  bool residual = false;     // y = act(conv + bias + residual), residual shaped like y

  // Clamp bounds when act is kNone/kRelu/kClip (fusable into a GEMM store), else +-inf.
  float clamp_min() const;
  float clamp_max() const;
  bool is_clamp() const {
    return act == Activation::kNone || act == Activation::kRelu || act == Activation::kClip;
  }
};

// The epilogue a fused node's `activation` and `activation_params` attributes name (no
// residual: that is the caller's): Clip's bounds and HardSigmoid's alpha / beta in p0 / p1,
// and gelu's divisor sqrt 2 in p0. Throws kInvalidInput on an unknown activation.
Epilogue epilogue_from_attrs(std::string_view activation, const std::vector<float>& params);

// Applies y[i] = act(y[i] + bias + (residual ? residual[i] : 0)) for i < n with the
// ISA's vector code (src/algo/microkernels/f32-vepilogue). The one epilogue path every
// algorithm shares.
void apply_epilogue(Isa isa, const Epilogue& e, size_t n, float* y, float bias,
                    const float* residual);

// Per-tensor affine quantization of an 8-bit tensor (ONNX QuantizeLinear convention):
// real = scale * (q - zero_point).
struct QuantParams {
  float scale = 1.f;
  int32_t zero_point = 0;
  DType type = DType::kU8;  // kU8 or kS8

  // [0, 255] or [-128, 127].
  int32_t lowest() const { return type == DType::kU8 ? 0 : -128; }
  int32_t highest() const { return type == DType::kU8 ? 255 : 127; }
  // Throws kInvalidInput (naming `what`) unless scale is finite and > 0, type is u8/s8 and
  // the zero point is in the type's range.
  void validate(const char* what) const;
};

// (float)((double)a_scale * b_scale / c_scale): the one rounding of the requantization
// multiplier every int8 path shares.
float requant_multiplier(float a_scale, float b_scale, float c_scale);

// The quantization of an int8 conv's input, output and residual (weights are symmetric
// per output channel: their scales come with the weights, ConvWeights::w_scale).
struct ConvQuant {
  QuantParams x;  // input
  QuantParams y;  // output
  QuantParams r;  // residual input (shaped like the output) when epilogue.residual
};

// The element types a ConvProblem can have; algorithms implement them side by side.
enum class ConvTypes : int {
  kF32,   // f32 input, weights, output
  kInt8,  // u8/s8 input and output, s8 weights (quantized)
  kHalf,  // f16 or bf16 input, weights, output (f32 bias)
};
inline constexpr int kConvTypesCount = 3;
const char* conv_types_name(ConvTypes t);  // "f32", "int8", "16-bit"

// What a prepared conv computes with (reported by every prepared conv, shown by profile).
enum class ConvCompute {
  kF32,         // f32 FMAs
  kInt8,        // 8-bit products, int32 accumulators, exact
  kEmulated,    // 16-bit storage widened to f32, f32 FMA, f32 accumulators
  kF32On16Bit,  // 16-bit storage read and written by the kernel itself (widened and rounded
                // in registers, no widening pass), f32 FMA
  kNativeFp16,  // AVX512-FP16 FMA, fp16 accumulators
  kNativeBf16,  // AVX512-BF16 vdpbf16ps, f32 accumulators
  kAmxBf16,     // AMX-BF16 tiles, f32 accumulators
  kAmxInt8,     // AMX-INT8 tiles, int32 accumulators, exact
};
// "f32", "int8", "emulated", "f32-on-16bit", "native-fp16", "native-bf16", "amx-bf16",
// "amx-int8".
const char* conv_compute_name(ConvCompute c);

struct ConvProblem {
  int64_t n = 1, c = 0, h = 0, w = 0;  // input NCHW
  int64_t k = 0;                       // output channels
  int64_t kh = 1, kw = 1;
  int64_t stride_h = 1, stride_w = 1;
  int64_t pad_t = 0, pad_l = 0, pad_b = 0, pad_r = 0;
  int64_t dil_h = 1, dil_w = 1;
  int64_t groups = 1;
  bool has_bias = false;
  Epilogue epilogue;
  // Element types of input (and, for the float types, residual), weights and output.
  // Set them with set_half / set_int8 so they stay consistent; validate() checks.
  DType x_type = DType::kF32, w_type = DType::kF32, y_type = DType::kF32;
  ConvQuant quant;  // meaningful for int8 problems only (x_type/y_type = quant.x/y.type)
  // Activation layouts of the input and of the output and residual. Blocked layouts are
  // f32 or int8 (nchw8c, nchw16c) or 16-bit (nchw16c); a blocked output may take an NCHW
  // input (a stem reading the model's image), otherwise both use the same block.
  Layout x_layout = Layout::kNchw, y_layout = Layout::kNchw;

  // This problem with f16 or bf16 everywhere (kInvalidInput for other types).
  ConvProblem& set_half(DType t);
  // This problem quantized: x and y (and r with a residual) as given, s8 weights.
  ConvProblem& set_int8(const QuantParams& x, const QuantParams& y, const QuantParams& r = {});
  // The same shapes and epilogue in f32 (what a widening 16-bit path computes).
  ConvProblem as_f32() const;
  ConvTypes types() const;
  bool is_int8() const { return types() == ConvTypes::kInt8; }
  bool is_half() const { return types() == ConvTypes::kHalf; }
  bool is_blocked() const { return dlas::is_blocked(x_layout) || dlas::is_blocked(y_layout); }
  // This problem with input layout x and output layout y.
  ConvProblem& set_layouts(Layout x, Layout y) {
    x_layout = x;
    y_layout = y;
    return *this;
  }

  int64_t oh() const { return (h + pad_t + pad_b - dil_h * (kh - 1) - 1) / stride_h + 1; }
  int64_t ow() const { return (w + pad_l + pad_r - dil_w * (kw - 1) - 1) / stride_w + 1; }
  int64_t c_per_group() const { return c / groups; }
  int64_t k_per_group() const { return k / groups; }
  bool is_depthwise() const { return groups == c && groups > 1 && k % c == 0; }
  int64_t macs() const { return n * k * oh() * ow() * c_per_group() * kh * kw; }
  int64_t weight_count() const { return k * c_per_group() * kh * kw; }
  int64_t input_count() const { return n * c * h * w; }
  int64_t output_count() const { return n * k * oh() * ow(); }

  // int8: the output clamp in the quantized domain -- the type's range intersected with
  // the activation's (Relu: >= y.zero_point; Clip(a, b): y.zero_point + nearbyint(a /
  // y.scale) .. y.zero_point + nearbyint(b / y.scale), the divisions in float).
  int32_t out_lo() const;
  int32_t out_hi() const;

  // Throws kInvalidInput when inconsistent (non-positive sizes, groups not dividing, empty
  // output, a type combination other than the three ConvTypes, a 16-bit layout other than
  // nchw16c or two different blocks). int8 also: activation a
  // clamp, valid quant params, and a reduction short enough for int32 (C/g * KH * KW * 255 *
  // 128 < 2^30, leaving 2^30 for the bias: kUnsupported otherwise).
  void validate() const;
  // The geometry: "c64_h32_w32_k64_3x3_s1x1_p1x1x1x1_d1x1_g1" (+"_n4" when n > 1) -- shape
  // lists, records. Then, for int8, "_u8s8u8" (x, w, y types; + "_r" + r type with a
  // residual); for 16-bit, "_f16" / "_bf16". f32 keys are the geometry alone. Blocked
  // layouts add "_<x layout>" and, when the output's differs, "_<y layout>" (NCHW adds
  // nothing).
  std::string key() const;
  // Parses the geometry part of key() back (bench/shapes files). Throws kInvalidInput.
  static ConvProblem from_key(std::string_view key);
};

// The weights of a conv as prepare() takes them: [k][c/groups][kh][kw] of the problem's
// w_type, with the bias and (int8) the per-output-channel weight scales.
struct ConvWeights {
  const void* data = nullptr;
  const float* bias = nullptr;        // f32 [k] or null (f32 and 16-bit)
  const int32_t* bias_s32 = nullptr;  // int8: s32 [k] at x.scale * w_scale[k], or null
  const float* w_scale = nullptr;     // int8: [k], finite and > 0

  static ConvWeights f32(const float* w, const float* bias = nullptr) { return {w, bias}; }
  static ConvWeights half(const uint16_t* w, const float* bias = nullptr) { return {w, bias}; }
  static ConvWeights int8(const int8_t* w, const float* w_scale, const int32_t* bias = nullptr) {
    return {w, nullptr, bias, w_scale};
  }
  const float* f32_data() const { return static_cast<const float*>(data); }
  const uint16_t* half_data() const { return static_cast<const uint16_t*>(data); }
  const int8_t* int8_data() const { return static_cast<const int8_t*>(data); }
};

// A conv prepared for one problem, knob point and ISA: weights packed, no
// allocation left to do. run() is const and re-entrant given distinct workspaces.
class PreparedConv {
 public:
  virtual ~PreparedConv() = default;
  // Scratch bytes run() needs for a pool of `threads` threads (64-byte aligned by the caller).
  virtual size_t workspace_bytes(int threads) const = 0;
  // x: [n][c][h][w] of x_type; y: [n][k][oh][ow] of y_type; residual: like y (int8: of
  // quant.r.type), or null when the epilogue has none; each in the problem's layout
  // (x_layout, y_layout). Must not allocate.
  virtual void run(const void* x, void* y, const void* residual, void* workspace,
                   ThreadPool& pool) const = 0;
  // Bytes of packed weights held.
  virtual size_t packed_bytes() const = 0;
  // The arithmetic this instance runs (for 16-bit types it depends on the ISA it was
  // prepared for).
  virtual ConvCompute compute() const = 0;
};

// One algorithm, for every element type it implements.
class ConvAlgorithm {
 public:
  virtual ~ConvAlgorithm() = default;
  // "direct", "gemm", "spatial-pack", "winograd", "depthwise", ... (CLI --conv-algo names).
  virtual std::string_view name() const = 0;
  // False also when the algorithm has no implementation for the problem's types.
  virtual bool supports(const ConvProblem& p) const = 0;
  // Knobs for this problem on this ISA. The default point is in the space.
  virtual KnobSpace knob_space(const ConvProblem& p, Isa isa) const = 0;
  virtual Knobs default_knobs(const ConvProblem& p, Isa isa) const = 0;
  // A machine profile's knobs, chosen on its shape class's calibration shape, fitted to p
  // (the result must be in knob_space(p, isa)). Knobs from tuning records and --layers are
  // run as given. Default: as they are.
  virtual Knobs fit_class_knobs(const ConvProblem& p, Isa isa, Knobs knobs) const {
    (void)p, (void)isa;
    return knobs;
  }
  // The knob points a survey (the machine calibration's) measures on p: the default first,
  // then up to `extra` others. Default: points spread evenly over the space (mixed-radix
  // order). An algorithm whose space holds a few families of different shape (register
  // tiles of 1..4 output blocks) names one point per family instead, so the survey
  // measures each family and not arbitrary corners of the space.
  virtual std::vector<Knobs> survey_knobs(const ConvProblem& p, Isa isa, int extra) const;
  // Validates knobs (kInvalidInput naming the knob); throws kUnsupported when
  // !supports(p).
  virtual std::unique_ptr<PreparedConv> prepare(const ConvProblem& p, const ConvWeights& weights,
                                                const Knobs& knobs, Isa isa) const = 0;
};
// Whether some implementation of the algorithm named `name` runs blocked layouts at all
// (its row names an NCHWc implementation).
bool conv_algorithm_has_blocked(std::string_view name);

// The one list of dense algorithms (src/algo/conv/conv_algorithms.inc), in a fixed order.
const std::vector<const ConvAlgorithm*>& conv_algorithms();
// The sparse algorithms (sparse-1x1, sparse-gemm, sparse-direct, sparse-spatial-pack), kept
// out of conv_algorithms() so dense tests and benches do not iterate them. They prepare
// from dense f32 weights (encoding the zeros away), so they are exact on any weights.
const std::vector<const ConvAlgorithm*>& sparse_conv_algorithms();
// Dense or sparse, by name; nullptr when unknown.
const ConvAlgorithm* find_conv_algorithm(std::string_view name);
// Names joined with '|' for messages and --help.
std::string conv_algorithm_names();

// The documented rule behind --conv-algo auto (docs/engine.md), for every element type and
// the ISA path `isa`; only algorithms that support p are returned (kUnsupported when none
// does). Measured per layer with dlas_bench_conv / dlas_bench_qconv / dlas_bench_hconv;
// the tuner replaces it with measurements.
//
// f32: depthwise for depthwise convs; winograd for 3x3 stride-1 convs with >= 16 input
// and output channels and an output of at least 14x14, or of 7x7..13x13 when its pixel
// count is not a multiple of 16 (gemm's panels then run partly empty); direct for stems
// (<= 4 input channels per group); gemm for everything else. Seeing the f32 weights
// (weights.data set), a pruned groups-1 layer (stems excepted) runs sparse when few
// enough weights are nonzero -- a 1x1 conv runs sparse-1x1 at density <=
// kSparse1x1MaxDensity (stride 1, no padding: the input is the SpMM operand) or
// kSparse1x1StridedMaxDensity (the subsampled input is packed first); any other conv runs
// sparse-direct at density <= kSparseDirectMaxDensity, or
// kSparseDirectVsWinogradMaxDensity where the dense rule picks winograd (2.25x fewer
// multiplies than direct). Thresholds sit just below the per-layer crossovers measured at
// 2 threads, so the rule errs towards dense.
//
// int8: depthwise for depthwise convs; on blocked activations winograd for 3x3 stride-1
// convs with outputs of at least 4x4 where it runs (the AVX2 path's 8-channel blocks), direct
// (its tiles on blocks) for everything else; on NCHW, on KxK convs with >= 16 input channels per
// group (groups 1) direct when stride 1, spatial-pack when strided -- except on the AMX path, where
// direct's AMX implicit GEMM takes every conv it covers; gemm for everything else.
//
// 16-bit: the f32 rule's choice for half_choice_problem(p) where that is an f32 problem;
// otherwise (bf16 on AVX512-BF16 and AMX paths) gemm runs the native arithmetic and takes
// every layer but depthwise ones, stems (<= 4 input channels per group: direct) and, on the
// AMX path, the layers direct's AMX implicit GEMM covers.
const ConvAlgorithm& auto_conv_algorithm(const ConvProblem& p, Isa isa,
                                         const ConvWeights& weights = {});
// The problem whose algorithm choice (auto rule, machine profile) a 16-bit layer takes:
// where its algorithms compute in f32 on widened values -- the path has no half arithmetic
// for the type, or the type is f16 on an AVX-512 path (AVX512-FP16's half FMAs measured
// slower there than f32 on 16-channel blocks: docs/decisions.md) -- the f32 problem the
// widened algorithms run (nchw16c on AVX-512 paths, else NCHW); otherwise p itself.
ConvProblem half_choice_problem(const ConvProblem& p, Isa isa);
inline constexpr double kSparse1x1MaxDensity = 0.35;
inline constexpr double kSparse1x1StridedMaxDensity = 0.12;
inline constexpr double kSparseDirectMaxDensity = 0.4;
inline constexpr double kSparseDirectVsWinogradMaxDensity = 0.25;
// ... and such a non-1x1 layer whose weights are 8x1 blocks along output channels (>= 80% of
// each stored block nonzero: block pruning bp:8x1) runs sparse-spatial-pack instead when its
// output has at most this many pixels (4x4: its register tiles beat sparse-direct's bsr8x1
// wide grid; from 8x8 on sparse-direct's output rows are as fast).
inline constexpr int64_t kSparseSpatialMaxPixels = 16;

// The literal definition every oracle shares (reference_qconv, reference_hconv and the
// reference interpreter's integer convs): calls fn(x_index, w_index) for every tap of
// output pixel (oy, ox) of image n, group g, that lands inside the input (padding
// contributes nothing); w_index is into one output channel's [C/g][KH][KW] weights.
template <class Fn>
inline void for_each_tap_inside(const ConvProblem& c, int64_t n, int64_t g, int64_t oy, int64_t ox,
                                Fn fn) {
  const int64_t cg = c.c_per_group();
  for (int64_t ci = 0; ci < cg; ++ci)
    for (int64_t ky = 0; ky < c.kh; ++ky) {
      const int64_t iy = oy * c.stride_h - c.pad_t + ky * c.dil_h;
      if (iy < 0 || iy >= c.h) continue;
      for (int64_t kx = 0; kx < c.kw; ++kx) {
        const int64_t ix = ox * c.stride_w - c.pad_l + kx * c.dil_w;
        if (ix < 0 || ix >= c.w) continue;
        fn(((n * c.c + g * cg + ci) * c.h + iy) * c.w + ix, (ci * c.kh + ky) * c.kw + kx);
      }
    }
}

}  // namespace dlas

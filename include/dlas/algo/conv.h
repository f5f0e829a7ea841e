// Convolution algorithms (DLAS layer 4). One ConvProblem (shapes, stride,
// padding, dilation, groups, fused epilogue) can be computed by several
// algorithms -- direct, GEMM (im2col), spatial pack, Winograd, depthwise --
// each publishing its knob space and untuned default, packing weights once
// (prepare) and running with no allocation. Data is NCHW at the interface;
// an algorithm may pack into a blocked layout internally.
//
// The one list of algorithms is src/algo/conv/conv_algorithms.cc.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "dlas/algo/knobs.h"
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

// Applies y[i] = act(y[i] + bias + (residual ? residual[i] : 0)) for i < n with the
// ISA's vector code (src/algo/microkernels/f32-vepilogue). The one epilogue path every
// algorithm shares.
void apply_epilogue(Isa isa, const Epilogue& e, size_t n, float* y, float bias,
                    const float* residual);

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

  int64_t oh() const { return (h + pad_t + pad_b - dil_h * (kh - 1) - 1) / stride_h + 1; }
  int64_t ow() const { return (w + pad_l + pad_r - dil_w * (kw - 1) - 1) / stride_w + 1; }
  int64_t c_per_group() const { return c / groups; }
  int64_t k_per_group() const { return k / groups; }
  bool is_depthwise() const { return groups == c && groups > 1 && k % c == 0; }
  int64_t macs() const { return n * k * oh() * ow() * c_per_group() * kh * kw; }
  int64_t weight_count() const { return k * c_per_group() * kh * kw; }
  // Throws kInvalidInput when inconsistent (non-positive sizes, groups not dividing, empty output).
  void validate() const;
  // "c64_h32_w32_k64_3x3_s1x1_p1x1x1x1_d1x1_g1" (+"_n4" when n > 1): shape lists, records.
  std::string key() const;
  // Parses key() back (bench/shapes files). Throws kInvalidInput.
  static ConvProblem from_key(std::string_view key);
};

// A conv prepared for one problem, knob point and ISA: weights packed, no
// allocation left to do. run() is const and re-entrant given distinct workspaces.
class PreparedConv {
 public:
  virtual ~PreparedConv() = default;
  // Scratch bytes run() needs for a pool of `threads` threads (64-byte aligned by the caller).
  virtual size_t workspace_bytes(int threads) const = 0;
  // in: [n][c][h][w]; out: [n][k][oh][ow]; residual: like out, or null when the
  // epilogue has none. Must not allocate.
  virtual void run(const float* in, float* out, const float* residual, void* workspace,
                   ThreadPool& pool) const = 0;
  // Bytes of packed weights held.
  virtual size_t packed_bytes() const = 0;
};

class ConvAlgorithm {
 public:
  virtual ~ConvAlgorithm() = default;
  // "direct", "gemm", "spatial-pack", "winograd", "depthwise", ... (CLI --conv-algo names).
  virtual std::string_view name() const = 0;
  virtual bool supports(const ConvProblem& p) const = 0;
  // Knobs for this problem on this ISA. The default point is in the space.
  virtual KnobSpace knob_space(const ConvProblem& p, Isa isa) const = 0;
  virtual Knobs default_knobs(const ConvProblem& p, Isa isa) const = 0;
  // weights: [k][c/groups][kh][kw]; bias: [k] or null. Validates knobs (kInvalidInput
  // naming the knob); throws kUnsupported when !supports(p).
  virtual std::unique_ptr<PreparedConv> prepare(const ConvProblem& p, const float* weights,
                                                const float* bias, const Knobs& knobs,
                                                Isa isa) const = 0;
};

// The one list, in a fixed order.
const std::vector<const ConvAlgorithm*>& conv_algorithms();
// The sparse algorithms (sparse-1x1, sparse-gemm, sparse-direct: sparse_conv_algorithms.inc),
// kept out of conv_algorithms() so dense tests and benches do not iterate them. They prepare
// from dense weights (encoding the zeros away), so they are exact on any weights.
const std::vector<const ConvAlgorithm*>& sparse_conv_algorithms();
// Dense or sparse, by name; nullptr when unknown.
const ConvAlgorithm* find_conv_algorithm(std::string_view name);
// Names joined with '|' for messages and --help.
std::string conv_algorithm_names();

// The documented rule behind --conv-algo auto (README "The engine"): depthwise for
// depthwise convs; winograd for 3x3 stride-1 convs with >= 16 input and output channels
// and an output of at least 14x14, or of 7x7..13x13 when its pixel count is not a
// multiple of 16 (gemm's panels then run partly empty); direct for stems (<= 4 input
// channels per group); gemm for everything else.
// Measured per layer with dlas_bench_conv; the tuner replaces it with measurements.
// Only algorithms that support p are returned.
const ConvAlgorithm& auto_conv_algorithm(const ConvProblem& p);

// The same rule seeing the weights ([K][C/g][KH][KW]): a pruned groups-1 layer (stems
// excepted) runs sparse when few enough weights are nonzero -- a 1x1 conv runs sparse-1x1
// at density <= kSparse1x1MaxDensity (stride 1, no padding: the input is the SpMM operand)
// or kSparse1x1StridedMaxDensity (the subsampled input is packed first); any other conv
// runs sparse-direct at density <= kSparseDirectMaxDensity, or
// kSparseDirectVsWinogradMaxDensity where the dense rule picks winograd (2.25x fewer
// multiplies than direct) -- else the dense rule above. Thresholds sit just below the
// per-layer crossovers measured at 2 threads (README "The engine"), so the rule errs
// towards dense; the tuner replaces it with per-layer measurements.
inline constexpr double kSparse1x1MaxDensity = 0.35;
inline constexpr double kSparse1x1StridedMaxDensity = 0.12;
inline constexpr double kSparseDirectMaxDensity = 0.4;
inline constexpr double kSparseDirectVsWinogradMaxDensity = 0.25;
// ... and such a non-1x1 layer whose weights are 8x1 blocks along output channels (>= 80% of
// each stored block nonzero: block pruning bp:8x1) runs sparse-spatial-pack instead when its
// output has at most this many pixels (4x4: its register tiles beat sparse-direct's bsr8x1
// wide grid; from 8x8 on sparse-direct's output rows are as fast).
inline constexpr int64_t kSparseSpatialMaxPixels = 16;
const ConvAlgorithm& auto_conv_algorithm(const ConvProblem& p, const float* weights);

}  // namespace dlas

// Post-training quantization (DLAS layer 3): int8 with calibration, fp16 and bf16.
//
// int8 writes a standard ONNX QDQ graph: every activation feeding a Conv, a Gemm or a
// MatMul with constant [K][N] weights (a Linear layer), and the end of every conv block (the
// conv output after its folded BatchNormalization, residual Add and Relu/Clip), passes
// through QuantizeLinear -> DequantizeLinear (per tensor, u8 asymmetric or s8 symmetric);
// Conv/Gemm/MatMul weights are s8 initializers quantized symmetrically per output channel
// (zero point 0, scale max|w| / 127) read through a per-axis DequantizeLinear, biases s32
// initializers at scale x_scale * w_scale[k]. ONNX Runtime and TensorRT-style tools read it
// as is; the dlas engine lowers it onto fused int8 convolutions and Linear layers
// (fuse_quantized_conv, fuse_quantized_fc in dlas/system/passes.h). MaxPool outputs share
// their input's parameters, so a MaxPool runs on the 8-bit values directly.
//
// Calibration (dlas/system/compress.h: it runs the engine) runs the fp32 model (compiled
// with dlas::Plan, every quantized tensor tapped as an output) over calibration inputs -- `random`:
// N(0, 1) samples from a fixed seed, or a directory of .npy files (one sample each, shaped like the
// model's input) -- and picks each tensor's range [lo, hi] from its observed min/max and a 2048-bin
// histogram of |x| by the calibrator:
//   minmax      the observed range;
//   percentile  |x| clipped at the P-th percentile (default 99.99);
//   entropy     TensorRT's KL-divergence threshold: the clip T minimising KL(P || Q) where
//               P is the histogram up to T with the tail folded into the last bin and Q
//               that distribution quantized to 128 levels (exact zeros left out: they
//               quantize exactly at any scale);
//   mse         the clip T minimising the expected squared error (clipping error of the
//               tail plus (T / levels)^2 / 12 rounding noise inside);
//   none        no data: a fixed range [-8, 8] ([0, 8] for Relu/Clip outputs), TVM's
//               global_scale = 8 rule -- what the DLAS paper's uncalibrated int8 (TVM's
//               relay.quantize without a calibration set) used, hence the comparison point;
//   auto        (the default) every one of minmax, percentile, entropy and mse, each tensor
//               keeping the range whose measured output error (RangeCandidate::error: the
//               relative error of the Conv/Gemm/MatMul outputs it feeds, on the calibration set)
//               is the smallest.
// The range is then [max(min, -T), min(max, T)] (0 always inside for u8). Model inputs keep
// their observed range [min, max] under every calibrator (images are data, not heavy-tailed
// activations; clipping them at a background spike destroyed accuracy).
//
// fp16 / bf16 convert every float initializer to the 16-bit type and insert Casts at the
// graph inputs and outputs, which stay f32 (the ONNX fp16 converter's keep_io_types style).
#pragma once

#include <cstdint>
#include <limits>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "dlas/algo/qconv.h"
#include "dlas/model/graph.h"
#include "dlas/optimize/compress_spec.h"

namespace dlas {

// One calibrator's range for one calibrated tensor, and the error it gave.
struct RangeCandidate {
  Calibrator calibrator = Calibrator::kMinMax;
  float lo = 0, hi = 0;
  // Relative output error on the calibration set, sqrt(sum (f(qdq(x)) - f(x))^2 / sum f(x)^2)
  // over the outputs f(x) of every Conv / Gemm / MatMul the tensor feeds (through MaxPool too; with
  // the layers' f32 weights, so only this tensor's rounding and clipping count), or of the
  // tensor itself when it feeds none. -1: not measured.
  double error = -1;
};

// The data calibrators int8:auto compares, in order of preference on ties.
inline constexpr Calibrator kAutoCalibrators[] = {Calibrator::kMse, Calibrator::kEntropy,
                                                  Calibrator::kPercentile, Calibrator::kMinMax};

// One quantized activation tensor.
struct QuantTensor {
  std::string name;
  float min = 0, max = 0;  // observed over the calibration set (0 with calibrator none)
  float lo = 0, hi = 0;    // the calibrated range
  QuantParams q;
  Calibrator calibrator = Calibrator::kNone;  // whose range it got (auto: the one it chose)
  double error = -1;               // that range's RangeCandidate::error (-1: not measured)
  std::string shares;              // a MaxPool output: the tensor whose parameters it shares
  std::vector<std::string> feeds;  // the Conv / Gemm / MatMul nodes reading it
  std::vector<RangeCandidate> candidates;  // every data calibrator's range and error
  // The smallest candidate error (-1 when none was measured).
  double best_error() const;
};

// One quantized Conv / Gemm / MatMul.
struct QuantLayer {
  std::string node, op;
  std::string input;                       // its activation (a QuantTensor name)
  float w_scale_min = 0, w_scale_max = 0;  // per-output-channel weight scales
  int64_t channels = 0;
};

struct QuantReport {
  QuantSpec spec;
  int samples = 0;  // calibration inputs run
  std::vector<QuantTensor> tensors;
  std::vector<QuantLayer> layers;
  int64_t converted_initializers = 0;  // fp16 / bf16
};

// --- The rewrites: calibration statistics in, a rewritten graph out ---
// (dlas/system/compress.h runs the calibration and calls these: quantize() there is the
// one-call entry point.)

// The activation tensors the int8 rewrite quantizes, on an inferred graph whose
// BatchNormalization is folded into the convs.
struct QuantTargets {
  std::vector<std::string> tensors;                     // in discovery order
  std::unordered_map<std::string, std::string> shares;  // MaxPool output -> its input
  std::set<std::string> nonnegative;                    // Relu / Clip(>= 0) outputs
  // The tensors whose range is calibrated: all but those that share another's parameters.
  std::vector<std::string> calibrated() const;
};
QuantTargets quant_targets(const Graph& folded);

// What calibration observed of one tensor: its finite range and a histogram of |x| in
// kCalibrationBins bins of bin_width (bin_width = max|x| / bins), for every calibrator but
// minmax and none.
constexpr int kCalibrationBins = 2048;
struct TensorStats {
  float min = std::numeric_limits<float>::infinity();
  float max = -std::numeric_limits<float>::infinity();
  std::vector<double> hist;
  double bin_width = 0;
  double zeros = 0;  // exact zeros (in hist[0] too): ReLU's dead half
};

// The range of one calibrated tensor with observed `stats` under calibrator `c` (not kAuto):
// [max(min, -T), min(max, T)] for the calibrator's clip T; the observed range for a model
// input (`model_input`) under every data calibrator; kNone's fixed range ([0, 8] when
// `nonnegative`, else [-8, 8]).
RangeCandidate calibrated_range(const TensorStats& stats, const QuantSpec& spec, Calibrator c,
                                bool nonnegative, bool model_input);

// Per calibrated tensor (targets.calibrated()[i]), the range of every calibrator of
// kAutoCalibrators, errors unmeasured; empty with Calibrator::kNone. The tensors spread over
// `threads` threads (the results do not depend on it).
std::vector<std::vector<RangeCandidate>> range_candidates(const Graph& folded,
                                                          const QuantSpec& spec,
                                                          const QuantTargets& targets,
                                                          const std::vector<TensorStats>& stats,
                                                          int threads = 1);

// The int8 QDQ rewrite of `folded` (see above) in place: stats[i] describes
// targets.calibrated()[i] (ignored with Calibrator::kNone). `candidates` (from
// range_candidates, errors measured: dlas/system/compress.h) are reported per tensor, and
// int8:auto takes the one with the smallest error (kInternal without them); without them
// every other calibrator computes its range from `stats`. Leaves the graph inferred; the
// report's `samples` is the caller's to fill.
QuantReport quantize_int8(Graph& folded, const QuantSpec& spec, const QuantTargets& targets,
                          const std::vector<TensorStats>& stats,
                          const std::vector<std::vector<RangeCandidate>>& candidates = {});

// One line, empty when all is well: the calibrated tensors whose measured error under the
// report's calibrator is high (above kHighQuantError) and which another calibrator at least
// halves, naming the worst one and int8:auto.
constexpr double kHighQuantError = 0.1;
std::string quant_warning(const QuantReport& report);

// The fp16 / bf16 conversion in place (spec.type kF16 or kBF16). Leaves the graph inferred.
QuantReport convert_half(Graph& graph, const QuantSpec& spec);

// --- Calibrators on a histogram of |x| (exposed for tests) ---
// hist[i] counts |x| in [i * bin_width, (i + 1) * bin_width); levels: quantization levels of
// the positive half (127 for s8, 255 for u8 on non-negative data). Returns the clip T.
double calibrate_threshold(const std::vector<double>& hist, double bin_width, Calibrator c,
                           double percentile, int levels);

// The quantization parameters of range [lo, hi] (u8: asymmetric with 0 exactly
// representable; s8: symmetric).
QuantParams quant_params_for_range(float lo, float hi, DType type);

}  // namespace dlas

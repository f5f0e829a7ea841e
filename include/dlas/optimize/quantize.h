// Post-training quantization (DLAS layer 3): int8 with calibration, fp16 and bf16.
//
// int8 writes a standard ONNX QDQ graph: every activation feeding a Conv or Gemm, and the
// end of every conv block (the conv output after its folded BatchNormalization, residual
// Add and Relu/Clip), passes through QuantizeLinear -> DequantizeLinear (per tensor, u8
// asymmetric or s8 symmetric); Conv/Gemm weights are s8 initializers quantized
// symmetrically per output channel (zero point 0, scale max|w| / 127) read through a
// per-axis DequantizeLinear, biases s32 initializers at scale x_scale * w_scale[k]. ONNX
// Runtime and TensorRT-style tools read it as is; the dlas engine lowers it onto fused int8
// convolutions (fuse_quantized_conv in dlas/system/passes.h). MaxPool outputs share their
// input's parameters, so a MaxPool runs on the 8-bit values directly.
//
// Calibration runs the fp32 model (compiled with dlas::Plan, every quantized tensor tapped
// as an output) over calibration inputs -- `random`: N(0, 1) samples from a fixed seed,
// or a directory of .npy files (one sample each, shaped like the model's input) -- and
// picks each tensor's range [lo, hi] from its observed min/max and a 2048-bin histogram of
// |x| by the calibrator:
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
//               relay.quantize without a calibration set) used, hence the comparison point.
// The range is then [max(min, -T), min(max, T)] (0 always inside for u8). Model inputs keep
// their observed range [min, max] under every calibrator (images are data, not heavy-tailed
// activations; clipping them at a background spike destroyed accuracy).
//
// fp16 / bf16 convert every float initializer to the 16-bit type and insert Casts at the
// graph inputs and outputs, which stay f32 (the ONNX fp16 converter's keep_io_types style).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "dlas/algo/qconv.h"
#include "dlas/model/graph.h"
#include "dlas/optimize/prune.h"

namespace dlas {

enum class QuantType { kInt8, kF16, kBF16 };
enum class Calibrator { kMinMax, kPercentile, kEntropy, kMse, kNone };

// "minmax", "percentile", "entropy", "mse", "none".
const char* calibrator_name(Calibrator c);
std::optional<Calibrator> calibrator_from_name(std::string_view name);

struct QuantSpec {
  QuantType type = QuantType::kInt8;
  Calibrator calibrator = Calibrator::kEntropy;
  double percentile = 99.99;          // kPercentile, in (0, 100]
  DType activations = DType::kU8;     // kU8 (asymmetric) or kS8 (symmetric)
  std::string calib_data = "random";  // "random", a directory of .npy files, or a dataset name
                                      // (dlas/data/dataset.h: preprocessed training images)
  int calib_samples = 32;             // random samples / at most this many files
  uint64_t seed = 0;                  // random calibration inputs

  // Canonical --compress part: "fp16", "bf16", "int8" (entropy, u8), "int8:minmax",
  // "int8:percentile=99.9:s8", ... (defaults omitted).
  std::string str() const;
};

// Parses one --compress part: int8[:CAL][:u8|s8] with CAL minmax | percentile[=P] | entropy
// | mse | none, fp16, bf16. kInvalidInput naming the part.
QuantSpec parse_quant_spec(std::string_view part);

// A whole --compress value: "dense" or '+'-joined parts, at most one pruning part (wp, bp,
// cp; applied first) and at most one quantization part.
struct CompressSpec {
  std::optional<PruneSpec> prune;
  std::optional<QuantSpec> quant;
  // Canonical: "dense", "wp:0.9", "int8", "wp:0.9+int8:minmax".
  std::string str() const;
};
CompressSpec parse_compress(std::string_view text);

// One quantized activation tensor.
struct QuantTensor {
  std::string name;
  float min = 0, max = 0;  // observed over the calibration set (0 with calibrator none)
  float lo = 0, hi = 0;    // the calibrated range
  QuantParams q;
};

// One quantized Conv / Gemm.
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

// Quantizes an inferred fp32 graph in place (BatchNormalization folded into the convs first)
// and leaves it inferred. kInvalidInput for bad calibration data (naming the file),
// kUnsupported when the graph has no float input to calibrate with.
QuantReport quantize(Graph& graph, const QuantSpec& spec);

// Applies a --compress value: prunes, then quantizes (random calibration unless the spec
// says otherwise). Returns the canonical spec.
std::string apply_compress_spec(Graph& graph, const CompressSpec& spec);

// Output error of a compressed model against its fp32 original, both compiled with
// `options`, on `samples` random N(0, 1) inputs (seeds seed, seed + 1, ...; the
// calibration uses others): top-1 agreement of the first output's argmax per image
// (rows of the batch), max and mean absolute error over all its elements.
struct OutputError {
  int samples = 0;
  int64_t images = 0;  // samples x batch
  double top1_agreement = 0, max_abs_err = 0, mean_abs_err = 0;
};
struct PlanOptions;
OutputError measure_output_error(const Graph& fp32, const Graph& compressed, int samples,
                                 uint64_t seed, const PlanOptions& options);

// --- Calibrators on a histogram of |x| (exposed for tests) ---
// hist[i] counts |x| in [i * bin_width, (i + 1) * bin_width); levels: quantization levels of
// the positive half (127 for s8, 255 for u8 on non-negative data). Returns the clip T.
double calibrate_threshold(const std::vector<double>& hist, double bin_width, Calibrator c,
                           double percentile, int levels);

// The quantization parameters of range [lo, hi] (u8: asymmetric with 0 exactly
// representable; s8: symmetric).
QuantParams quant_params_for_range(float lo, float hi, DType type);

}  // namespace dlas

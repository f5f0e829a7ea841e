// Compressing a model end to end (DLAS layer 5 driving layer 3): the parts of compression
// that run the engine. Calibration compiles the fp32 model with dlas::Plan, taps every
// tensor the int8 rewrite quantizes and collects its statistics; the rewrites themselves
// (dlas/optimize/quantize.h) take those statistics as data.
//
//   Graph g = load_model("resnet18.onnx");
//   QuantReport r = quantize(g, parse_quant_spec("int8:percentile"));
//   std::string canonical = apply_compress_spec(g, parse_compress("wp:0.5+int8"));
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "dlas/core/tensor.h"
#include "dlas/model/graph.h"
#include "dlas/optimize/compress_spec.h"
#include "dlas/optimize/quantize.h"

namespace dlas {

struct PlanOptions;

// The calibration inputs of spec.calib_data: "random" (spec.calib_samples N(0, 1) samples
// from spec.seed), a directory of .npy files (one sample each, shaped like the model's one
// input) or a dataset name (preprocessed training images). kInvalidInput naming the file or
// the dataset when they do not fit the model.
std::vector<std::vector<Tensor>> calibration_inputs(const Graph& graph, const QuantSpec& spec);

// Runs the fp32 `folded` graph over the samples with every tensor of `taps` tapped as an
// output; returns one TensorStats per tap (histograms only when asked). The samples spread
// over up to `threads` workers (<= 0: one per logical CPU; fewer where their plans would not
// fit the calibration's memory), each running a one-thread plan, so the statistics are the
// same whatever the count.
std::vector<TensorStats> calibrate(const Graph& folded, const std::vector<std::string>& taps,
                                   const std::vector<std::vector<Tensor>>& samples, bool histograms,
                                   int threads = 1);

// Measures every candidate range's error (RangeCandidate::error, dlas/optimize/quantize.h) on
// the first kErrorSamples samples: the fp32 `folded` graph runs with every quantized tensor
// tapped, and a copy of the Conv / Gemm layers reading them runs once on those values and
// once per candidate index on their fake-quantized (quantize-dequantize) values; a tensor
// that feeds no layer is compared with its own fake-quantized copy. Workers as calibrate()'s;
// each sample's sums are added in sample order, so the errors do not depend on their count.
// candidates[i] belongs to targets.calibrated()[i] (range_candidates' shape).
constexpr size_t kErrorSamples = 8;
void measure_range_errors(const Graph& folded, const QuantTargets& targets,
                          const std::vector<std::vector<Tensor>>& samples,
                          std::vector<std::vector<RangeCandidate>>& candidates, DType activations,
                          int threads = 1);

// Quantizes an inferred fp32 graph in place (BatchNormalization folded into the convs first,
// then calibrated, then rewritten) and leaves it inferred. kInvalidInput for bad calibration
// data (naming the file), kUnsupported when the graph has no float input to calibrate with.
// The calibration runs on up to `threads` workers (<= 0: one per logical CPU); the result
// does not depend on their number. `progress`, when set, is called on the calling thread with
// the work done and its total (samples through the model; an error-measurement sample
// counts as several).
using CalibrationProgress = std::function<void(int64_t done, int64_t total)>;
QuantReport quantize(Graph& graph, const QuantSpec& spec, int threads = 0,
                     const CalibrationProgress& progress = {});

// Applies a --compress value: prunes, then quantizes (random calibration unless the spec
// says otherwise; calibration workers as quantize()'s). Returns the canonical spec.
std::string apply_compress_spec(Graph& graph, const CompressSpec& spec, int threads = 0,
                                const CalibrationProgress& progress = {});

// Output error of a compressed model against its fp32 original, both compiled with
// `options`, on `samples` random N(0, 1) inputs (seeds seed, seed + 1, ...; the
// calibration uses others): top-1 agreement of the first output's argmax per image
// (rows of the batch), max and mean absolute error over all its elements.
struct OutputError {
  int samples = 0;
  int64_t images = 0;  // samples x batch
  double top1_agreement = 0, max_abs_err = 0, mean_abs_err = 0;
};
OutputError measure_output_error(const Graph& fp32, const Graph& compressed, int samples,
                                 uint64_t seed, const PlanOptions& options);

}  // namespace dlas

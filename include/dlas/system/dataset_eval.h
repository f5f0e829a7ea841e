// A deployed variant's accuracy on a labelled dataset beside its fp32 original: what
// `dlas eval --dataset` reports. The variant is compressed as it is deployed for the dataset
// (int8 calibrated on its training images, dlas/system/accuracy.h) and both plans are scored
// in one pass over the data.
#pragma once

#include <functional>
#include <optional>
#include <string>

#include "dlas/system/accuracy.h"

namespace dlas {

struct VariantAccuracy {
  std::string compress;                // the canonical spec applied ("dense": none)
  std::string calibration;             // int8: the calibration set; "" otherwise
  data::Accuracy deployed;             // the compressed variant's
  std::optional<data::Accuracy> fp32;  // the uncompressed model's, when anything was applied
  std::string warning;                 // accuracy_drop_warning's line ("": none)
};

// One line, empty when all is well: a quantization-only spec (int8, fp16, bf16; no pruning,
// whose loss is its own) that loses more than kQuantDropWarning points of top-1 against
// fp32, naming a better choice (int8:auto for another calibrator; otherwise the per-tensor
// errors of `dlas quantize` and fp16).
constexpr double kQuantDropWarning = 2.0;  // points
std::string accuracy_drop_warning(const CompressSpec& spec, const VariantAccuracy& result);

// Compresses `fp32` (its image input [B,C,H,W] sets the batch) with `spec` for the dataset
// `ds` was opened from (`dataset`), compiles it and, unless `spec` is dense, the fp32 graph
// too, with `options`, and scores them on the first `limit` records of `ds` (0: all),
// preprocessed as the graph's metadata says (dlas/system/preprocess_meta.h), else with the
// dataset's default, for the model's input. `progress` sees the deployed variant's running accuracy
// after each batch. `deployed_options`, when given, adjusts the deployed plan's options for
// the compressed graph (tuning records name its layers); the fp32 plan keeps `options`.
using DeployedOptions = std::function<void(const Graph& compressed, PlanOptions& options)>;
VariantAccuracy evaluate_variant(const Graph& fp32, const CompressSpec& spec,
                                 const std::string& dataset, const data::Dataset& ds,
                                 const PlanOptions& options, int64_t limit = 0,
                                 const EvalProgress& progress = {},
                                 const DeployedOptions& deployed_options = {});

}  // namespace dlas

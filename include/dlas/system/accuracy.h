// Accuracy in the engine: top-1/top-5 of dlas's own compiled variants (the Plan that is
// deployed: sparse kernels, int8, fp16) on a labelled dataset (dlas/data/dataset.h).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "dlas/data/dataset.h"
#include "dlas/model/graph.h"
#include "dlas/model/zoo.h"
#include "dlas/optimize/quantize.h"
#include "dlas/system/plan.h"

namespace dlas {

// Called after each batch: images done so far, images in all, the first plan's accuracy.
using EvalProgress = std::function<void(int64_t done, int64_t total, const data::Accuracy&)>;

// Runs every executor on each batch of `loader` and scores its first output as logits. The
// executors take the same image input [B,C,H,W] with B = the loader's batch; a final short
// batch is zero-padded and only its real rows are scored. Returns one Accuracy per executor;
// with keep_hits each also holds every sample's hits (data::Accuracy::hits).
std::vector<data::Accuracy> evaluate_executors(const std::vector<Executor*>& executors,
                                               data::Loader& loader,
                                               const EvalProgress& progress = {},
                                               bool keep_hits = false);
// evaluate_executors for dlas plans.
std::vector<data::Accuracy> evaluate_plans(const std::vector<Plan*>& plans, data::Loader& loader,
                                           const EvalProgress& progress = {});

// One call: opens `dataset`'s split, compiles `graph` (its image input [B,C,H,W] sets the
// batch; it must take the dataset's preprocessed images) and scores it on the first `limit`
// records (0 = all) with test-time preprocessing (the graph's metadata, else the dataset's
// default: dlas/system/preprocess_meta.h).
data::Accuracy evaluate_accuracy(const Graph& graph, const PlanOptions& options,
                                 std::string_view dataset, data::Split split = data::Split::kTest,
                                 int64_t limit = 0, const EvalProgress& progress = {});

// int8 calibration for a dataset: this many preprocessed training images (TensorRT's
// guidance is ~500), instead of random inputs.
inline constexpr int64_t kDatasetCalibImages = 512;

// Applies a --compress spec to `graph` (its image input sets the batch) as it is deployed for
// `dataset`: pruning as usual, int8 with a calibrator calibrated on kDatasetCalibImages
// training images of the dataset. Returns the canonical spec; `calibration` (when given) gets
// a description of the calibration set, "" when none. What `dlas eval --dataset` and the
// study's accuracy columns both use.
std::string apply_compress_for_dataset(Graph& graph, CompressSpec spec, std::string_view dataset,
                                       std::string* calibration = nullptr);

// The zoo options that adapt a zoo model to a dataset's preprocessed images and classes
// (-1 fields of `base` are filled in; kInvalidInput for non-square images).
ZooOptions zoo_options_for(const data::DatasetInfo& info, ZooOptions base = {});

// The model's image input shape [N,C,H,W] (its first input); kInvalidInput otherwise.
const Shape& image_input_shape(const Graph& g);

}  // namespace dlas

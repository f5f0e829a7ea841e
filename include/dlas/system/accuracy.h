// Accuracy in the engine: top-1/top-5 of dlas's own compiled variants (the Plan that is
// deployed: sparse kernels, int8, fp16) on a labelled dataset (dlas/data/dataset.h).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "dlas/data/dataset.h"
#include "dlas/model/graph.h"
#include "dlas/model/zoo.h"
#include "dlas/system/plan.h"

namespace dlas {

// Called after each batch: images done so far, images in all, the first plan's accuracy.
using EvalProgress = std::function<void(int64_t done, int64_t total, const data::Accuracy&)>;

// Runs every plan on each batch of `loader` and scores its first output as logits. The plans
// take the same image input [B,C,H,W] with B = the loader's batch; a final short batch is
// zero-padded and only its real rows are scored. Returns one Accuracy per plan.
std::vector<data::Accuracy> evaluate_plans(const std::vector<Plan*>& plans, data::Loader& loader,
                                           const EvalProgress& progress = {});

// One call: opens `dataset`'s split, compiles `graph` (its image input [B,C,H,W] sets the
// batch; it must take the dataset's preprocessed images) and scores it on the first `limit`
// records (0 = all) with test-time preprocessing.
data::Accuracy evaluate_accuracy(const Graph& graph, const PlanOptions& options,
                                 std::string_view dataset, data::Split split = data::Split::kTest,
                                 int64_t limit = 0, const EvalProgress& progress = {});

// The zoo options that adapt a zoo model to a dataset's preprocessed images and classes
// (-1 fields of `base` are filled in; kInvalidInput for non-square images).
ZooOptions zoo_options_for(const data::DatasetInfo& info, ZooOptions base = {});

// int8 calibration on a dataset, as `dlas eval --dataset` does it: a calibrated int8 part of
// `spec` (calibrator not none) is pointed at `dataset`'s preprocessed training images, about
// kDatasetCalibImages of them in batches of `batch` (the model's input batch). Returns what
// was set ("fashion-mnist train, 500 images"), "" when the spec calibrates nothing.
struct CompressSpec;
inline constexpr int64_t kDatasetCalibImages = 512;  // TensorRT's guidance: ~500 images
std::string use_dataset_calibration(CompressSpec& spec, std::string_view dataset, int64_t batch);

// The model's image input shape [N,C,H,W] (its first input); kInvalidInput otherwise.
const Shape& image_input_shape(const Graph& g);

}  // namespace dlas

// Accuracy of compiled plans on a dataset (dlas/system/accuracy.h).
#include "dlas/system/accuracy.h"

#include <algorithm>
#include <cstring>

#include "dlas/core/error.h"
#include "dlas/optimize/quantize.h"
#include "dlas/system/compress.h"
#include "dlas/system/preprocess_meta.h"

namespace dlas {

const Shape& image_input_shape(const Graph& g) {
  DLAS_CHECK(!g.inputs.empty() && g.inputs[0].shape.size() == 4, ErrorKind::kInvalidInput,
             "the model's first input is not an image batch [N,C,H,W]",
             g.inputs.empty() ? "" : " (it is " + shape_str(g.inputs[0].shape) + ")");
  return g.inputs[0].shape;
}

namespace {
std::string use_dataset_calibration(CompressSpec& spec, std::string_view dataset, int64_t batch) {
  if (!spec.quant || spec.quant->type != QuantType::kInt8 ||
      spec.quant->calibrator == Calibrator::kNone)
    return "";
  const int64_t b = std::max<int64_t>(1, batch);
  spec.quant->calib_data = std::string(dataset);
  spec.quant->calib_samples = static_cast<int>(std::max<int64_t>(1, kDatasetCalibImages / b));
  return str(dataset, " train, ", spec.quant->calib_samples * b, " images");
}
}  // namespace

std::string apply_compress_for_dataset(Graph& graph, CompressSpec spec, std::string_view dataset,
                                       std::string* calibration) {
  std::string how = use_dataset_calibration(spec, dataset, image_input_shape(graph)[0]);
  if (calibration) *calibration = how;
  return apply_compress_spec(graph, spec);
}

ZooOptions zoo_options_for(const data::DatasetInfo& info, ZooOptions o) {
  const std::vector<int64_t> s = data::default_preprocess(info, false).output_shape(info);
  DLAS_CHECK(s[1] == s[2] || o.image_size > 0, ErrorKind::kInvalidInput, info.name,
             ": zoo models take square images, the dataset's are ", s[1], "x", s[2]);
  if (o.in_channels < 0) o.in_channels = s[0];
  if (o.image_size < 0) o.image_size = s[1];
  if (o.num_classes < 0) o.num_classes = info.classes;
  return o;
}

std::vector<data::Accuracy> evaluate_plans(const std::vector<Plan*>& plans, data::Loader& loader,
                                           const EvalProgress& progress) {
  return evaluate_executors(std::vector<Executor*>(plans.begin(), plans.end()), loader, progress);
}

std::vector<data::Accuracy> evaluate_executors(const std::vector<Executor*>& plans,
                                               data::Loader& loader, const EvalProgress& progress,
                                               bool keep_hits) {
  DLAS_CHECK(!plans.empty(), ErrorKind::kInternal, "evaluate_executors: no executors");
  const Shape want = loader.batch_shape();
  for (Executor* p : plans) {
    const Graph& g = p->graph();
    DLAS_CHECK(!g.inputs.empty() && g.inputs[0].shape == want && g.inputs[0].dtype == DType::kF32,
               ErrorKind::kInvalidInput, "the model's input ",
               g.inputs.empty() ? "(none)" : shape_str(g.inputs[0].shape), " is not the loader's ",
               shape_str(want), " f32 batches");
  }
  std::vector<data::Accuracy> acc(plans.size());
  for (data::Accuracy& a : acc) a.keep_hits = keep_hits;
  std::vector<std::vector<Tensor>> outputs;
  for (Executor* p : plans) outputs.push_back(p->make_outputs());
  Tensor padded(DType::kF32, want);
  const int64_t total = loader.samples();
  int64_t done = 0;
  data::Batch b;
  loader.start_epoch(0);
  while (loader.next(b)) {
    const int64_t n = b.size();
    Tensor input = b.images;
    if (n < want[0]) {
      std::memset(padded.raw(), 0, padded.nbytes());
      std::memcpy(padded.raw(), b.images.raw(), b.images.nbytes());
      input = padded;
    }
    for (size_t k = 0; k < plans.size(); ++k) {
      plans[k]->run_into({input}, outputs[k]);
      Tensor logits = outputs[k][0];
      if (logits.dtype() != DType::kF32) logits = logits.cast(DType::kF32);
      DLAS_CHECK(logits.rank() >= 1 && logits.dim(0) == want[0], ErrorKind::kInvalidInput,
                 "the model's output ", logits.describe(), " is not [", want[0], ", classes]");
      if (n < want[0]) {
        const int64_t per = logits.numel() / want[0];
        Tensor head(DType::kF32, {n, per});
        std::memcpy(head.raw(), logits.raw(), static_cast<size_t>(n * per) * sizeof(float));
        logits = head;
      }
      acc[k].add(logits, b.labels);
    }
    done += n;
    if (progress) progress(done, total, acc[0]);
  }
  return acc;
}

data::Accuracy evaluate_accuracy(const Graph& graph, const PlanOptions& options,
                                 std::string_view dataset, data::Split split, int64_t limit,
                                 const EvalProgress& progress) {
  const std::unique_ptr<data::Dataset> ds = data::open_dataset(dataset, split);
  const Shape& input = image_input_shape(graph);
  data::Loader loader(*ds, resolve_preprocess(ds->info(), {}, &graph).pre,
                      {.batch = input[0], .limit = limit});
  Plan plan(graph, options);
  return evaluate_plans({&plan}, loader, progress)[0];
}

}  // namespace dlas

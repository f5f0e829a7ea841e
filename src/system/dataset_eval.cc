#include "dlas/system/dataset_eval.h"

#include "dlas/system/preprocess_meta.h"

#include <algorithm>
#include <memory>

namespace dlas {

VariantAccuracy evaluate_variant(const Graph& fp32, const CompressSpec& spec,
                                 const std::string& dataset, const data::Dataset& ds,
                                 const PlanOptions& options, int64_t limit,
                                 const EvalProgress& progress) {
  const data::DatasetInfo& info = ds.info();
  const Shape input = image_input_shape(fp32);
  // The preprocessing the graph carries (the CLI stores the flags' there), else the dataset's.
  const data::Preprocess pre = resolve_preprocess(info, {}, &fp32).pre;
  VariantAccuracy out;
  Graph compressed = fp32;
  out.compress = apply_compress_for_dataset(compressed, spec, dataset, &out.calibration);
  Plan deployed(compressed, options);
  std::unique_ptr<Plan> reference;
  if (out.compress != "dense") reference = std::make_unique<Plan>(fp32, options);
  std::vector<Plan*> plans = {&deployed};
  if (reference) plans.push_back(reference.get());
  // Decoding threads pay only for image folders (JPEG/PNG); IDX/CIFAR records are memcpy'd
  // and preprocessing one costs microseconds, less than waking a worker.
  const bool decodes = info.name.rfind("folder:", 0) == 0;
  data::Loader loader(
      ds, pre,
      {.batch = input[0], .limit = limit, .threads = decodes ? std::max(1, options.threads) : 1});
  const std::vector<data::Accuracy> acc = evaluate_plans(plans, loader, progress);
  out.deployed = acc[0];
  if (reference) out.fp32 = acc[1];
  return out;
}

}  // namespace dlas

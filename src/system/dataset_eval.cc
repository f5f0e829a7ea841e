#include "dlas/system/dataset_eval.h"

#include "dlas/system/preprocess_meta.h"

#include <algorithm>
#include <cstdio>
#include <memory>

namespace dlas {

VariantAccuracy evaluate_variant(const Graph& fp32, const CompressSpec& spec,
                                 const std::string& dataset, const data::Dataset& ds,
                                 const PlanOptions& options, int64_t limit,
                                 const EvalProgress& progress,
                                 const DeployedOptions& deployed_options) {
  const data::DatasetInfo& info = ds.info();
  const Shape input = image_input_shape(fp32);
  // The preprocessing the graph carries (the CLI stores the flags' there), else the dataset's.
  const data::Preprocess pre = resolve_preprocess(info, {}, &fp32).pre;
  VariantAccuracy out;
  Graph compressed = fp32;
  out.compress = apply_compress_for_dataset(compressed, spec, dataset, &out.calibration);
  PlanOptions deployed_with = options;
  if (deployed_options) deployed_options(compressed, deployed_with);
  Plan deployed(compressed, deployed_with);
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
  out.warning = accuracy_drop_warning(spec, out);
  return out;
}

std::string accuracy_drop_warning(const CompressSpec& spec, const VariantAccuracy& r) {
  if (!spec.quant || spec.prune || !r.fp32 || r.deployed.samples == 0) return "";
  const double fp32 = 100 * r.fp32->top1_rate(), got = 100 * r.deployed.top1_rate();
  if (fp32 - got <= kQuantDropWarning) return "";
  const QuantSpec& q = *spec.quant;
  std::string advice;
  if (q.type == QuantType::kInt8 && q.calibrator != Calibrator::kAuto) {
    QuantSpec a = q;
    a.calibrator = Calibrator::kAuto;
    advice = "try --compress " + a.str() +
             " (int8:auto: per tensor the calibrator with the "
             "smallest measured error)";
  } else if (q.type == QuantType::kInt8) {
    advice =
        "dlas quantize --calib-data DATASET shows which tensors lose it; fp16 keeps fp32's "
        "accuracy";
  } else {
    advice = q.type == QuantType::kBF16 ? "try fp16 (more mantissa bits)"
                                        : "try bf16 (a wider exponent range)";
  }
  char buf[160];
  std::snprintf(buf, sizeof buf,
                "warning: %s loses %.2f points of top-1 against fp32 (%.2f%% -> %.2f%%); ",
                r.compress.c_str(), fp32 - got, fp32, got);
  return buf + advice;
}

}  // namespace dlas

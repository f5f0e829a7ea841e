// `dlas eval --dataset`: top-1/top-5 of dlas's own compiled variant on a labelled dataset (the
// accuracy half of a compression study; dlas/system/dataset_eval.h).
#include <chrono>
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>

#include "cli.h"
#include "dlas/core/progress.h"
#include "dlas/data/dataset.h"
#include "dlas/optimize/quantize.h"
#include "dlas/system/dataset_eval.h"

namespace dlas::cli {

namespace {

data::Split parse_split(const std::string& s) {
  DLAS_CHECK(s == "test" || s == "train", ErrorKind::kUsage, "--split must be test or train");
  return s == "test" ? data::Split::kTest : data::Split::kTrain;
}

// The model as given, shaped for the dataset's preprocessed images at `batch`: a zoo model is
// built for them (*note says its weights are untrained), an ONNX model re-batched when it can.
Graph load_for_dataset(ModelArgs m, const data::DatasetInfo& info, int64_t batch,
                       const PreprocessArgs& pre, std::string* note) {
  m.batch = batch;
  if (find_zoo_model(m.model)) {
    ZooOptions z;
    z.in_channels = m.in_channels;
    z.image_size = m.image_size;
    z.num_classes = m.num_classes;
    // Built for the images the flags make (--resize, --center-crop change their size).
    const std::vector<int64_t> s =
        resolve_preprocess(info, parse_preprocess_args(pre), nullptr).pre.output_shape(info);
    if (z.image_size < 0 && s[1] == s[2]) z.image_size = s[1];
    z = zoo_options_for(info, z);
    m.in_channels = z.in_channels;
    m.image_size = z.image_size;
    m.num_classes = z.num_classes;
    *note = str(m.model, " is built for ", info.name, " (", m.in_channels, "x", m.image_size, "x",
                m.image_size, ", ", m.num_classes,
                " classes) with untrained weights: expect chance accuracy; evaluate a trained "
                ".onnx for real numbers");
    return load_model_from_args(m);
  }
  Graph g = load_model_from_args(m);
  // Re-batch an ONNX model to the evaluation batch unless its shape was given.
  const Shape s = image_input_shape(g);
  if (m.input_shapes.empty() && s[0] != batch) {
    m.input_shapes = {str(batch, "x", s[1], "x", s[2], "x", s[3])};
    try {
      g = load_model_from_args(m);
    } catch (const Error&) {
      // A model with its batch baked in (e.g. a Reshape to [1, -1]) keeps it.
    }
  }
  return g;
}

void print_eval(const std::string& model, const DatasetEvalArgs& a, const VariantAccuracy& r,
                int64_t batch, const std::string& note, const data::Preprocess& pre,
                PreprocessSource source, const std::vector<std::string>& warnings, double seconds,
                bool json) {
  if (json) {
    nlohmann::ordered_json j;
    j["model"] = model;
    j["compress"] = r.compress;
    j["dataset"] = a.dataset;
    j["split"] = a.split;
    j["samples"] = r.deployed.samples;
    j["top1"] = r.deployed.top1_rate();
    j["top5"] = r.deployed.top5_rate();
    if (r.fp32) {
      j["fp32_top1"] = r.fp32->top1_rate();
      j["fp32_top5"] = r.fp32->top5_rate();
    }
    if (!r.calibration.empty()) j["calibration"] = r.calibration;
    j["batch"] = batch;
    j["seconds"] = seconds;
    if (!note.empty()) j["note"] = note;
    j["preprocess"] = nlohmann::ordered_json::parse(data::preprocess_to_json(pre));
    j["preprocess_source"] = preprocess_source_name(source);
    j["warnings"] = warnings;
    std::cout << j.dump(2) << "\n";
    return;
  }
  if (!note.empty()) std::printf("note: %s\n", note.c_str());
  if (!r.calibration.empty()) std::printf("int8 calibration: %s\n", r.calibration.c_str());
  std::printf("%s %s on %s %s: %lld images, top-1 %.2f%%, top-5 %.2f%%", model.c_str(),
              r.compress.c_str(), a.dataset.c_str(), a.split.c_str(), (long long)r.deployed.samples,
              100 * r.deployed.top1_rate(), 100 * r.deployed.top5_rate());
  if (r.fp32)
    std::printf(" (fp32: top-1 %.2f%%, top-5 %.2f%%)", 100 * r.fp32->top1_rate(),
                100 * r.fp32->top5_rate());
  std::printf(", %.1f s\n", seconds);
  std::printf("preprocessing (%s): %s\n", preprocess_source_name(source), pre.describe().c_str());
}
}  // namespace

int run_dataset_eval(const ModelArgs& model, const EngineArgs& engine, const DatasetEvalArgs& a,
                     bool json) {
  const auto t0 = std::chrono::steady_clock::now();
  CompressSpec spec;
  try {
    spec = parse_compress(engine.compress);
  } catch (const Error& e) {
    throw Error(e.kind(), "--compress " + std::string(e.what()));
  }
  const data::Split split = parse_split(a.split);
  DLAS_CHECK(a.limit >= 0, ErrorKind::kUsage, "--limit must be >= 0");
  const std::unique_ptr<data::Dataset> ds = data::open_dataset(a.dataset, split);
  std::string note;
  Graph fp32 =
      load_for_dataset(model, ds->info(), a.batch_given ? model.batch : 100, a.preprocess, &note);
  // flags > the model's metadata > the dataset's default, carried by the graph from here on
  // (evaluation and int8 calibration follow it). A zoo model is built here: no warning.
  const ResolvedPreprocess pre =
      apply_preprocess_args(fp32, ds->info(), a.preprocess, model.model, false, /*warn=*/false);
  std::vector<std::string> warnings;
  if (!find_zoo_model(model.model)) {
    const std::string w = default_preprocess_warning(pre, ds->info(), model.model);
    if (!w.empty()) warnings.push_back(w);
  }
  for (const std::string& w : warnings) std::cerr << "dlas: " << w << "\n";
  // A bar (or a line every 5 s) for evaluations long enough to wait for.
  Progress bar({.tty = progress_tty(json), .label = "eval", .line_fraction = 0, .line_seconds = 5});
  auto progress = [&](int64_t done, int64_t total, const data::Accuracy& acc) {
    if (total < 2000) return;
    char top1[32];
    std::snprintf(top1, sizeof top1, ", top-1 %.2f%%", 100 * acc.top1_rate());
    bar.update(done, total, bar.counts(done, total, "images") + top1, done == total);
    if (done == total) bar.finish(/*keep=*/true);
  };
  // --records name the compressed model's layers: they apply once it is compressed.
  EngineArgs untuned = engine;
  untuned.records.clear();
  const DeployedOptions with_records = [&](const Graph& deployed, PlanOptions& o) {
    if (!engine.records.empty()) apply_records_file(deployed, engine.records, o);
  };
  const VariantAccuracy r = evaluate_variant(
      fp32, spec, a.dataset, *ds, plan_options_from_args(untuned), a.limit, progress, with_records);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const std::string chance = chance_level_warning(r.deployed.top1_rate(), ds->info().classes);
  if (!chance.empty()) {
    warnings.push_back(chance);
    std::cerr << "dlas: " << chance << "\n";
  }
  if (!r.warning.empty()) {  // a quantized variant far below fp32
    warnings.push_back(r.warning);
    std::cerr << "dlas: " << r.warning << "\n";
  }
  print_eval(model.model, a, r, image_input_shape(fp32)[0], note, pre.pre, pre.source, warnings,
             seconds, json);
  return 0;
}

}  // namespace dlas::cli

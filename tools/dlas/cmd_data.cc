// dlas eval --dataset: top-1/top-5 of dlas's own compiled variant on a labelled dataset
// (the accuracy half of a compression study), and `dlas data info`.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>

#include "cli.h"
#include "dlas/data/dataset.h"
#include "dlas/optimize/quantize.h"
#include "dlas/system/accuracy.h"

namespace dlas::cli {

namespace {

class EvalProgressPrinter {
 public:
  explicit EvalProgressPrinter(bool tty) : tty_(tty), start_(Clock::now()), last_(start_) {}
  void operator()(int64_t done, int64_t total, const data::Accuracy& acc) {
    const auto now = Clock::now();
    const double t = std::chrono::duration<double>(now - start_).count();
    const double eta = done > 0 ? t * double(total - done) / double(done) : 0;
    if (tty_) {
      const int width = 30, filled = total ? int(width * done / total) : width;
      std::fprintf(stderr, "\r[%s%s] %lld/%lld images  top-1 %.2f%%  %.1f s  ETA %.0f s ",
                   std::string(size_t(filled), '#').c_str(),
                   std::string(size_t(width - filled), '.').c_str(), (long long)done,
                   (long long)total, 100 * acc.top1_rate(), t, eta);
      if (done == total) std::fputc('\n', stderr);
    } else if (done < total &&
               std::chrono::duration<double>(now - last_).count() >= kLineEverySeconds) {
      std::fprintf(stderr, "eval: %lld/%lld images, top-1 so far %.2f%%, %.1f s, ETA %.0f s\n",
                   (long long)done, (long long)total, 100 * acc.top1_rate(), t, eta);
      last_ = now;
    }
  }

 private:
  using Clock = std::chrono::steady_clock;
  static constexpr double kLineEverySeconds = 5.0;
  bool tty_;
  Clock::time_point start_, last_;
};

data::Split parse_split(const std::string& s) {
  DLAS_CHECK(s == "test" || s == "train", ErrorKind::kUsage, "--split must be test or train");
  return s == "test" ? data::Split::kTest : data::Split::kTrain;
}

}  // namespace

int run_dataset_eval(const ModelArgs& model_in, const EngineArgs& engine, const DatasetEvalArgs& a,
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
  const data::DatasetInfo& info = ds->info();
  const int64_t batch = a.batch_given ? model_in.batch : 100;

  // The model, shaped for the dataset's preprocessed images.
  ModelArgs m = model_in;
  m.batch = batch;
  std::string note;
  Graph fp32;
  if (find_zoo_model(m.model)) {
    ZooOptions z;
    z.in_channels = m.in_channels;
    z.image_size = m.image_size;
    z.num_classes = m.num_classes;
    z = zoo_options_for(info, z);
    m.in_channels = z.in_channels;
    m.image_size = z.image_size;
    m.num_classes = z.num_classes;
    fp32 = load_model_from_args(m);
    note = str(m.model, " is built for ", info.name, " (", m.in_channels, "x", m.image_size, "x",
               m.image_size, ", ", m.num_classes,
               " classes) with untrained weights: expect chance accuracy; evaluate a trained "
               ".onnx for real numbers");
  } else {
    fp32 = load_model_from_args(m);
    // Re-batch an ONNX model to the evaluation batch unless its shape was given.
    const Shape s = image_input_shape(fp32);
    if (m.input_shapes.empty() && s[0] != batch) {
      ModelArgs rb = m;
      rb.input_shapes = {str(batch, "x", s[1], "x", s[2], "x", s[3])};
      try {
        fp32 = load_model_from_args(rb);
      } catch (const Error&) {
        // A model with its batch baked in (e.g. a Reshape to [1, -1]) keeps it.
      }
    }
  }
  const Shape input = image_input_shape(fp32);
  const data::Preprocess pre = data::preprocess_for_input(info, input);

  // The deployed variant: pruned and/or quantized; int8 calibrates on training images.
  Graph compressed = fp32;
  const std::string calibration = use_dataset_calibration(spec, a.dataset, input[0]);
  const std::string compress = apply_compress_spec(compressed, spec);
  const bool dense = compress == "dense";
  const PlanOptions o = plan_options_from_args(engine);
  Plan deployed(compressed, o);
  std::unique_ptr<Plan> reference;
  if (!dense) reference = std::make_unique<Plan>(fp32, o);
  std::vector<Plan*> plans = {&deployed};
  if (reference) plans.push_back(reference.get());

  // Decoding threads pay only for image folders (JPEG/PNG); IDX/CIFAR records are memcpy'd
  // and preprocessing one costs microseconds, less than waking a worker.
  const bool decodes = info.name.rfind("folder:", 0) == 0;
  data::Loader loader(
      *ds, pre,
      {.batch = input[0], .limit = a.limit, .threads = decodes ? std::max(1, o.threads) : 1});
  EvalProgressPrinter printer(::isatty(2) && !json);
  EvalProgress progress;
  if (loader.samples() >= 2000) progress = std::ref(printer);
  const std::vector<data::Accuracy> acc = evaluate_plans(plans, loader, progress);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();

  if (json) {
    nlohmann::ordered_json j;
    j["model"] = m.model;
    j["compress"] = compress;
    j["dataset"] = a.dataset;
    j["split"] = data::split_name(split);
    j["samples"] = acc[0].samples;
    j["top1"] = acc[0].top1_rate();
    j["top5"] = acc[0].top5_rate();
    if (reference) {
      j["fp32_top1"] = acc[1].top1_rate();
      j["fp32_top5"] = acc[1].top5_rate();
    }
    if (!calibration.empty()) j["calibration"] = calibration;
    j["batch"] = input[0];
    j["seconds"] = seconds;
    if (!note.empty()) j["note"] = note;
    std::cout << j.dump(2) << "\n";
    return 0;
  }
  if (!note.empty()) std::printf("note: %s\n", note.c_str());
  if (!calibration.empty()) std::printf("int8 calibration: %s\n", calibration.c_str());
  std::printf("%s %s on %s %s: %lld images, top-1 %.2f%%, top-5 %.2f%%", m.model.c_str(),
              compress.c_str(), a.dataset.c_str(), data::split_name(split),
              (long long)acc[0].samples, 100 * acc[0].top1_rate(), 100 * acc[0].top5_rate());
  if (reference)
    std::printf(" (fp32: top-1 %.2f%%, top-5 %.2f%%)", 100 * acc[1].top1_rate(),
                100 * acc[1].top5_rate());
  std::printf(", %.1f s\n", seconds);
  return 0;
}

void add_data_command(CLI::App& app, Action& run) {
  auto* cmd = app.add_subcommand("data", "Datasets: inspect what `--dataset NAME` reads");
  cmd->require_subcommand(1);
  auto* info_cmd =
      cmd->add_subcommand("info", "Size per split, image shape, classes and source of a dataset");
  auto name = std::make_shared<std::string>();
  auto json = std::make_shared<bool>(false);
  std::string names;
  for (const std::string& n : data::dataset_names()) names += (names.empty() ? "" : ", ") + n;
  info_cmd->add_option("NAME", *name, "dataset: " + names)->required();
  info_cmd->add_flag("--json", *json, "print one JSON object");
  info_cmd->callback([&run, name, json] {
    run = [name, json] {
      nlohmann::ordered_json j;
      j["dataset"] = *name;
      data::DatasetInfo info;
      for (data::Split s : {data::Split::kTrain, data::Split::kTest}) {
        const auto ds = data::open_dataset(*name, s);
        info = ds->info();
        j["splits"][data::split_name(s)] = ds->size();
      }
      const data::Preprocess pre = data::default_preprocess(info, false);
      j["name"] = info.name;
      j["source"] = info.source;
      j["shape"] = {info.channels, info.height, info.width};
      j["classes"] = info.classes;
      j["class_names"] = info.class_names;
      j["preprocessed_shape"] = pre.output_shape(info);
      j["mean"] = pre.mean;
      j["std"] = pre.std;
      if (*json) {
        std::cout << j.dump(2) << "\n";
        return 0;
      }
      std::printf("%s: %s\n", name->c_str(),
                  info.source.empty() ? "generated (no files)" : info.source.c_str());
      std::printf("  train %s images, test %s images\n",
                  with_commas(j["splits"]["train"].get<int64_t>()).c_str(),
                  with_commas(j["splits"]["test"].get<int64_t>()).c_str());
      std::printf("  images %lldx%lldx%lld (CxHxW, u8), %d classes\n", (long long)info.channels,
                  (long long)info.height, (long long)info.width, info.classes);
      if (!info.class_names.empty()) {
        std::string cls;
        for (const std::string& c : info.class_names) cls += (cls.empty() ? "" : ", ") + c;
        std::printf("  classes: %s\n", cls.c_str());
      }
      std::string mean, sd;
      for (float v : pre.mean) mean += (mean.empty() ? "" : ", ") + str(v);
      for (float v : pre.std) sd += (sd.empty() ? "" : ", ") + str(v);
      std::printf("  preprocessing (test): to [0,1], normalize mean [%s] std [%s]\n", mean.c_str(),
                  sd.c_str());
      return 0;
    };
  });
}

}  // namespace dlas::cli

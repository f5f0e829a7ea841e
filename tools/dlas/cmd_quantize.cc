// dlas quantize: post-training quantization to an int8 QDQ model (calibrated) or an fp16 /
// bf16 model, written as ONNX (dlas/optimize/quantize.h).
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <nlohmann/json.hpp>
#include <optional>

#include "cli.h"
#include "cmd_compress.h"
#include "dlas/core/file.h"
#include "dlas/core/progress.h"
#include "dlas/data/dataset.h"
#include "dlas/model/onnx.h"
#include "dlas/optimize/quantize.h"
#include "dlas/system/compress.h"

namespace dlas::cli {

namespace {

struct QuantizeArgs {
  std::string dtype;
  std::string calibrator = "auto";
  double percentile = 99.99;
  std::string calib_data = "random";
  int calib_samples = 32;
  int threads = 0;
  std::string activations = "u8";
  uint64_t calib_seed = 0;
  std::string output;
  bool json = false;
  PreprocessArgs preprocess;  // of the dataset's calibration images
};

QuantSpec spec_from_args(const QuantizeArgs& a) {
  QuantSpec q;
  if (a.dtype == "fp16" || a.dtype == "bf16") {
    q = parse_quant_spec(a.dtype);
  } else {
    DLAS_CHECK(a.dtype == "int8", ErrorKind::kUsage, "--dtype must be int8, fp16 or bf16");
    const auto c = calibrator_from_name(a.calibrator);
    DLAS_CHECK(c, ErrorKind::kUsage,
               "--calibrator must be auto, minmax, percentile, entropy, mse or none");
    q.calibrator = *c;
    DLAS_CHECK(a.percentile > 0 && a.percentile <= 100, ErrorKind::kUsage,
               "--percentile must be in (0, 100]");
    q.percentile = a.percentile;
    q.activations = a.activations == "s8" ? DType::kS8 : DType::kU8;
  }
  DLAS_CHECK(a.calib_samples >= 1, ErrorKind::kUsage, "--calib-samples must be >= 1");
  q.calib_data = a.calib_data;
  q.calib_samples = a.calib_samples;
  q.seed = a.calib_seed;
  if (q.calib_data != "random" && !std::filesystem::is_directory(q.calib_data)) {
    try {
      data::open_dataset(q.calib_data, data::Split::kTrain);  // fails before the model loads
    } catch (const Error& e) {
      fail(ErrorKind::kInvalidInput, "--calib-data '", q.calib_data,
           "' is neither 'random', a directory, nor a dataset: ", e.what());
    }
  }
  return q;
}

}  // namespace

void add_quantize_command(CLI::App& app, Action& run) {
  auto* cmd = app.add_subcommand(
      "quantize", "Quantize a model (int8 QDQ with calibration, fp16, bf16) and write it as ONNX");
  auto model = std::make_shared<ModelArgs>();
  auto a = std::make_shared<QuantizeArgs>();
  add_model_args(*cmd, *model);
  cmd->add_option("--dtype", a->dtype, "int8, fp16 or bf16")
      ->required()
      ->check(CLI::IsMember({"int8", "fp16", "bf16"}));
  cmd->add_option("--calibrator", a->calibrator,
                  "int8 activation ranges: auto (default: per tensor, the calibrator with the "
                  "smallest measured output error), minmax, percentile, entropy (KL, "
                  "TensorRT's), mse, or none (data-free: TVM's global_scale = 8 rule)")
      ->default_val("auto")
      ->check(CLI::IsMember({"auto", "minmax", "percentile", "entropy", "mse", "none"}));
  cmd->add_option("--percentile", a->percentile, "percentile calibrator's P (default 99.99)")
      ->default_val(99.99);
  cmd->add_option("--calib-data", a->calib_data,
                  "calibration inputs: 'random' (N(0,1), seeded), a directory of .npy files, or "
                  "a dataset (e.g. fashion-mnist: preprocessed training images, shuffled by "
                  "--calib-seed)")
      ->default_val("random");
  cmd->add_option("--calib-samples", a->calib_samples,
                  "random samples, at most this many files, or dataset batches (default 32)")
      ->default_val(32);
  cmd->add_option("--calib-seed", a->calib_seed, "seed of the random calibration inputs");
  cmd->add_option("--activations", a->activations,
                  "int8 activations: u8 (asymmetric, default) or s8 (symmetric)")
      ->default_val("u8")
      ->check(CLI::IsMember({"u8", "s8"}));
  cmd->add_option("--threads", a->threads,
                  "calibration workers, each running the model on one thread (default 0: one per "
                  "logical CPU); the result does not depend on it")
      ->default_val(0)
      ->check(CLI::Range(0, 1024));
  add_preprocess_args(*cmd, a->preprocess);
  cmd->add_option("-o,--output", a->output, "output .onnx path")->required();
  cmd->add_flag("--json", a->json,
                "print one JSON object with the per-tensor ranges, errors and per-layer scales");
  cmd->callback([&run, model, a] {
    run = [model, a] {
      const QuantSpec spec = spec_from_args(*a);  // bad flags fail before the model loads
      const bool dataset =
          spec.calib_data != "random" && !std::filesystem::is_directory(spec.calib_data);
      const PreprocessFlags flags = parse_preprocess_args(a->preprocess);
      DLAS_CHECK(dataset || !flags.any(), ErrorKind::kUsage,
                 "--mean, --std, --scale, --channel-order, --input-layout, --resize and "
                 "--center-crop apply with --calib-data DATASET");
      check_output_folder(a->output);
      Graph g = load_model_from_args(*model);
      // Calibration images preprocessed as the model expects; the written model records it.
      if (dataset && spec.type == QuantType::kInt8 && spec.calibrator != Calibrator::kNone)
        apply_preprocess_args(g, data::open_dataset(spec.calib_data, data::Split::kTrain)->info(),
                              a->preprocess, model->model);
      std::optional<Progress> bar;
      CalibrationProgress progress;
      if (spec.type == QuantType::kInt8 && spec.calibrator != Calibrator::kNone) {
        bar.emplace(Progress::Options{.tty = progress_tty(a->json),
                                      .label = "calibrate",
                                      .line_fraction = 0,
                                      .line_seconds = 10});
        progress = [&bar](int64_t done, int64_t total) {
          bar->update(done, total, bar->counts(done, total, "runs"), done == total && bar->tty());
        };
      }
      const QuantReport r = quantize(g, spec, a->threads, progress);
      if (bar) bar->finish(/*keep=*/false);
      export_onnx_file(g, a->output);  // written to a temporary name and renamed
      if (a->json) {
        nlohmann::ordered_json j;
        j["model"] = model->model;
        j["output"] = a->output;
        j.update(quant_report_json(r));
        std::cout << j.dump(2) << "\n";
        if (const std::string w = quant_warning(r); !w.empty())
          std::fprintf(stderr, "%s\n", w.c_str());
        return 0;
      }
      print_quant_report(r);
      std::printf("wrote %s\n", a->output.c_str());
      if (const std::string w = quant_warning(r); !w.empty())
        std::fprintf(stderr, "%s\n", w.c_str());
      return 0;
    };
  });
}

}  // namespace dlas::cli

// dlas quantize: post-training quantization to an int8 QDQ model (calibrated) or an fp16 /
// bf16 model, written as ONNX (dlas/optimize/quantize.h). dlas eval: the output error of a
// compressed model against fp32 on random inputs.
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <nlohmann/json.hpp>

#include "cli.h"
#include "dlas/data/dataset.h"
#include "dlas/optimize/quantize.h"

namespace dlas::cli {

namespace {

struct QuantizeArgs {
  std::string dtype;
  std::string calibrator = "entropy";
  double percentile = 99.99;
  std::string calib_data = "random";
  int calib_samples = 32;
  std::string activations = "u8";
  uint64_t calib_seed = 0;
  std::string output;
  bool json = false;
};

QuantSpec spec_from_args(const QuantizeArgs& a) {
  QuantSpec q;
  if (a.dtype == "fp16" || a.dtype == "bf16") {
    q = parse_quant_spec(a.dtype);
  } else {
    DLAS_CHECK(a.dtype == "int8", ErrorKind::kUsage, "--dtype must be int8, fp16 or bf16");
    const auto c = calibrator_from_name(a.calibrator);
    DLAS_CHECK(c, ErrorKind::kUsage,
               "--calibrator must be minmax, percentile, entropy, mse or none");
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

nlohmann::ordered_json report_json(const QuantReport& r) {
  nlohmann::ordered_json j;
  j["spec"] = r.spec.str();
  j["dtype"] = r.spec.type == QuantType::kInt8  ? "int8"
               : r.spec.type == QuantType::kF16 ? "fp16"
                                                : "bf16";
  if (r.spec.type != QuantType::kInt8) {
    j["converted_initializers"] = r.converted_initializers;
    return j;
  }
  j["calibrator"] = calibrator_name(r.spec.calibrator);
  if (r.spec.calibrator == Calibrator::kPercentile) j["percentile"] = r.spec.percentile;
  j["activations"] = dtype_name(r.spec.activations);
  j["calib_data"] = r.spec.calib_data;
  j["calib_samples"] = r.samples;
  j["tensors"] = nlohmann::ordered_json::array();
  for (const QuantTensor& t : r.tensors)
    j["tensors"].push_back({{"name", t.name},
                            {"min", t.min},
                            {"max", t.max},
                            {"lo", t.lo},
                            {"hi", t.hi},
                            {"scale", t.q.scale},
                            {"zero_point", t.q.zero_point},
                            {"type", dtype_name(t.q.type)}});
  j["layers"] = nlohmann::ordered_json::array();
  std::map<std::string, const QuantTensor*> by_name;
  for (const QuantTensor& t : r.tensors) by_name[t.name] = &t;
  for (const QuantLayer& l : r.layers) {
    const QuantTensor* x = by_name.count(l.input) ? by_name[l.input] : nullptr;
    j["layers"].push_back({{"node", l.node},
                           {"op", l.op},
                           {"input", l.input},
                           {"input_scale", x ? x->q.scale : 0.f},
                           {"input_zero_point", x ? x->q.zero_point : 0},
                           {"channels", l.channels},
                           {"weight_scale_min", l.w_scale_min},
                           {"weight_scale_max", l.w_scale_max}});
  }
  return j;
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
                  "int8 activation ranges: minmax, percentile, entropy (KL, TensorRT's), mse, "
                  "or none (data-free: TVM's global_scale = 8 rule)")
      ->default_val("entropy")
      ->check(CLI::IsMember({"minmax", "percentile", "entropy", "mse", "none"}));
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
  cmd->add_option("-o,--output", a->output, "output .onnx path")->required();
  cmd->add_flag("--json", a->json, "print one JSON object with the per-layer scales");
  cmd->callback([&run, model, a] {
    run = [model, a] {
      const QuantSpec spec = spec_from_args(*a);  // bad flags fail before the model loads
      const std::filesystem::path dir = std::filesystem::path(a->output).parent_path();
      DLAS_CHECK(dir.empty() || std::filesystem::is_directory(dir), ErrorKind::kInvalidInput,
                 a->output, ": folder '", dir.string(), "' does not exist");
      Graph g = load_model_from_args(*model);
      const QuantReport r = quantize(g, spec);
      export_onnx_file(g, a->output);  // written to a temporary name and renamed
      if (a->json) {
        nlohmann::ordered_json j;
        j["model"] = model->model;
        j["output"] = a->output;
        j.update(report_json(r));
        std::cout << j.dump(2) << "\n";
        return 0;
      }
      if (spec.type == QuantType::kInt8) {
        std::printf("%-48s %12s %12s %12s %5s\n", "TENSOR", "RANGE LO", "RANGE HI", "SCALE", "ZP");
        for (const QuantTensor& t : r.tensors) {
          const std::string name =
              t.name.size() > 48 ? "..." + t.name.substr(t.name.size() - 45) : t.name;
          std::printf("%-48s %12.5g %12.5g %12.5g %5d\n", name.c_str(), t.lo, t.hi, t.q.scale,
                      t.q.zero_point);
        }
        std::printf(
            "\n%s: %zu activations, %zu Conv/Gemm layers (s8 per-channel weights), "
            "%d calibration samples\n",
            spec.str().c_str(), r.tensors.size(), r.layers.size(), r.samples);
      } else {
        std::printf("%s: %lld initializers converted\n", spec.str().c_str(),
                    static_cast<long long>(r.converted_initializers));
      }
      std::printf("wrote %s\n", a->output.c_str());
      return 0;
    };
  });
}

void add_eval_command(CLI::App& app, Action& run) {
  auto* cmd = app.add_subcommand(
      "eval",
      "Output error of a compressed model (--compress) against fp32 on random inputs: top-1 "
      "agreement, max and mean absolute error; with --dataset: top-1/top-5 accuracy of the "
      "compiled variant on a labelled dataset");
  auto model = std::make_shared<ModelArgs>();
  auto engine = std::make_shared<EngineArgs>();
  auto samples = std::make_shared<int>(32);
  auto seed = std::make_shared<uint64_t>(1000);
  auto json = std::make_shared<bool>(false);
  auto data_args = std::make_shared<DatasetEvalArgs>();
  add_model_args(*cmd, *model);
  add_engine_args(*cmd, *engine);
  std::string names;
  for (const std::string& n : data::dataset_names()) names += (names.empty() ? "" : ", ") + n;
  cmd->add_option("--dataset", data_args->dataset,
                  "accuracy mode: top-1/top-5 on this dataset (" + names +
                      "); zoo models are built for its shape and classes (untrained); --batch "
                      "is then the images per run (default 100); int8 calibrates on 512 "
                      "training images");
  cmd->add_option("--split", data_args->split, "dataset split: test (default) or train")
      ->check(CLI::IsMember({"test", "train"}));
  cmd->add_option("--limit", data_args->limit, "only the first N images (0: all)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--samples", *samples, "random N(0,1) inputs (default 32)")
      ->default_val(32)
      ->check(CLI::Range(1, 1000000));
  cmd->add_option("--input-seed", *seed, "seed of the first input (default 1000)");
  cmd->add_flag("--json", *json, "print one JSON object");
  cmd->callback([&run, cmd, model, engine, samples, seed, json, data_args] {
    data_args->batch_given = cmd->get_option("--batch")->count() > 0;
    if (data_args->dataset.empty() &&
        (cmd->get_option("--split")->count() > 0 || cmd->get_option("--limit")->count() > 0))
      throw CLI::ValidationError("--split/--limit", "only apply with --dataset");
    run = [model, engine, samples, seed, json, data_args] {
      if (!data_args->dataset.empty()) return run_dataset_eval(*model, *engine, *data_args, *json);
      const std::string spec = compress_name(engine->compress);  // fails before loading
      const Graph fp32 = load_model_from_args(*model);
      Graph compressed = fp32;
      apply_compress(compressed, engine->compress);
      const PlanOptions o = plan_options_from_args(*engine, &compressed);
      const OutputError e = measure_output_error(fp32, compressed, *samples, *seed, o);
      if (*json) {
        nlohmann::ordered_json j;
        j["model"] = model->model;
        j["compress"] = spec;
        j["samples"] = e.samples;
        j["images"] = e.images;
        j["top1_agreement"] = e.top1_agreement;
        j["max_abs_err"] = e.max_abs_err;
        j["mean_abs_err"] = e.mean_abs_err;
        std::cout << j.dump(2) << "\n";
        return 0;
      }
      std::printf(
          "%s %s vs fp32 on %d random inputs: top-1 agreement %.2f%%, max abs error "
          "%.4g, mean abs error %.4g\n",
          model->model.c_str(), spec.c_str(), e.samples, 100 * e.top1_agreement, e.max_abs_err,
          e.mean_abs_err);
      return 0;
    };
  });
}

}  // namespace dlas::cli

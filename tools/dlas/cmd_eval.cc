// dlas eval: the output error of a compressed model against fp32 on random inputs, or with
// --dataset its top-1/top-5 on a labelled dataset (cmd_eval_dataset.cc).
#include <cstdio>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>

#include "cli.h"
#include "dlas/data/dataset.h"
#include "dlas/optimize/quantize.h"
#include "dlas/system/compress.h"

namespace dlas::cli {

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
  add_preprocess_args(*cmd, data_args->preprocess);
  cmd->add_flag("--json", *json, "print one JSON object");
  cmd->callback([&run, cmd, model, engine, samples, seed, json, data_args] {
    data_args->batch_given = cmd->get_option("--batch")->count() > 0;
    if (data_args->dataset.empty() &&
        (cmd->get_option("--split")->count() > 0 || cmd->get_option("--limit")->count() > 0))
      throw CLI::ValidationError("--split/--limit", "only apply with --dataset");
    if (data_args->dataset.empty() && !preprocess_arg_list(data_args->preprocess).empty())
      throw CLI::ValidationError("--mean/--std/--scale/...", "only apply with --dataset");
    run = [model, engine, samples, seed, json, data_args] {
      if (!data_args->dataset.empty()) return run_dataset_eval(*model, *engine, *data_args, *json);
      const std::string spec = compress_name(engine->compress);  // fails before loading
      const Graph fp32 = load_model_from_args(*model);
      Graph compressed = fp32;
      apply_compress(compressed, engine->compress, nullptr, engine->threads);
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

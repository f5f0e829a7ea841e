// `dlas data info`: what `--dataset NAME` reads.
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>

#include "cli.h"
#include "dlas/data/dataset.h"

namespace dlas::cli {

void add_data_command(CLI::App& app, Action& run) {
  auto* cmd = app.add_subcommand("data", "Datasets: inspect what `--dataset NAME` reads");
  cmd->require_subcommand(1);
  auto* info_cmd =
      cmd->add_subcommand("info", "Size per split, image shape, classes and source of a dataset");
  auto name = std::make_shared<std::string>();
  auto json = std::make_shared<bool>(false);
  auto model = std::make_shared<ModelArgs>();
  auto pre_args = std::make_shared<PreprocessArgs>();
  std::string names;
  for (const std::string& n : data::dataset_names()) names += (names.empty() ? "" : ", ") + n;
  info_cmd->add_option("NAME", *name, "dataset: " + names)->required();
  info_cmd->add_option("--model", model->model,
                       "show the preprocessing this model gets (its metadata, flags, shape)");
  add_preprocess_args(*info_cmd, *pre_args);
  info_cmd->add_flag("--json", *json, "print one JSON object");
  info_cmd->callback([&run, name, json, model, pre_args] {
    run = [name, json, model, pre_args] {
      nlohmann::ordered_json j;
      j["dataset"] = *name;
      data::DatasetInfo info;
      for (data::Split s : {data::Split::kTrain, data::Split::kTest}) {
        const auto ds = data::open_dataset(*name, s);
        info = ds->info();
        j["splits"][data::split_name(s)] = ds->size();
      }
      // The preprocessing in force: flags > the model's metadata > the dataset's default.
      ResolvedPreprocess resolved;
      if (!model->model.empty()) {
        Graph g = load_model_from_args(*model);
        resolved = apply_preprocess_args(g, info, *pre_args, model->model, false, /*warn=*/false);
      } else {
        resolved = resolve_preprocess(info, parse_preprocess_args(*pre_args), nullptr);
      }
      const data::Preprocess& pre = resolved.pre;
      j["name"] = info.name;
      j["source"] = info.source;
      j["shape"] = {info.channels, info.height, info.width};
      j["classes"] = info.classes;
      j["class_names"] = info.class_names;
      j["preprocessed_shape"] = pre.output_shape(info);
      j["mean"] = pre.mean;
      j["std"] = pre.std;
      if (!model->model.empty()) j["model"] = model->model;
      j["preprocess"] = nlohmann::ordered_json::parse(data::preprocess_to_json(pre));
      j["preprocess_source"] = preprocess_source_name(resolved.source);
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
      const std::vector<int64_t> out = pre.output_shape(info);
      std::printf("  preprocessing (test, from %s%s): %s -> %lldx%lldx%lld (%s)\n",
                  preprocess_source_name(resolved.source),
                  model->model.empty() ? "" : (" for " + model->model).c_str(),
                  pre.describe().c_str(), (long long)out[0], (long long)out[1], (long long)out[2],
                  pre.layout == data::InputLayout::kNhwc ? "HxWxC" : "CxHxW");
      std::printf("  metadata %s: %s\n", kPreprocessKey, data::preprocess_to_json(pre).c_str());
      return 0;
    };
  });
}

}  // namespace dlas::cli

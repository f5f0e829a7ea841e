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

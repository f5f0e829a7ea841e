// `dlas records best`: the best record per task of a tuning log (dlas/system/tune.h).
#include <cstdio>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>

#include "cmd_tune.h"
#include "dlas/system/tune.h"

namespace dlas::cli {

void add_records_command(CLI::App& app, Action& run) {
  auto* rec = app.add_subcommand("records", "Work with tuning records (JSON Lines)");
  rec->require_subcommand(1);
  auto* best = rec->add_subcommand("best", "Keep the best record per task");
  auto in = std::make_shared<std::string>();
  auto out = std::make_shared<std::string>();
  auto json = std::make_shared<bool>(false);
  best->add_option("IN", *in, "records file (JSON Lines)")->required()->check(CLI::ExistingFile);
  best->add_option("-o,--output", *out, "distilled records file to write")->required();
  best->add_flag("--json", *json, "print one JSON object");
  best->callback([&run, in, out, json] {
    run = [in, out, json] {
      const std::vector<tune::Record> all = tune::read_records(*in);
      const std::vector<tune::Record> b = tune::best_records(all);
      tune::write_records(*out, b);
      size_t failed = 0;
      for (const auto& r : all) failed += !r.ok();
      if (*json) {
        nlohmann::ordered_json j;
        j["input"] = *in;
        j["output"] = *out;
        j["records"] = all.size();
        j["failed"] = failed;
        j["tasks"] = b.size();
        std::cout << j.dump(2) << "\n";
      } else {
        std::printf("%zu records (%zu failed) -> %zu tasks' best in %s\n", all.size(), failed,
                    b.size(), out->c_str());
      }
      return 0;
    };
  });
}

}  // namespace dlas::cli

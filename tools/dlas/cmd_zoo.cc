#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>

#include "cli.h"

namespace dlas::cli {

void add_zoo_command(CLI::App& app, Action& run) {
  auto* cmd = app.add_subcommand("zoo", "List the built-in models");
  auto json = std::make_shared<bool>(false);
  cmd->add_flag("--json", *json, "print a JSON array");
  cmd->callback([&run, json] {
    run = [json] {
      if (*json) {
        nlohmann::json arr = nlohmann::json::array();
        for (const auto& e : zoo_models())
          arr.push_back({{"name", e.name},
                         {"dataset", e.dataset},
                         {"input", {e.in_channels, e.image_size, e.image_size}},
                         {"classes", e.num_classes},
                         {"description", e.description}});
        std::cout << arr.dump(2) << "\n";
        return 0;
      }
      std::printf("%-20s %-9s %-12s %-8s %s\n", "NAME", "DATASET", "INPUT", "CLASSES",
                  "DEFINITION");
      for (const auto& e : zoo_models()) {
        const std::string in = str(e.in_channels, "x", e.image_size, "x", e.image_size);
        std::printf("%-20s %-9s %-12s %-8lld %s\n", e.name.c_str(), e.dataset.c_str(), in.c_str(),
                    static_cast<long long>(e.num_classes), e.description.c_str());
      }
      return 0;
    };
  });
}

}  // namespace dlas::cli

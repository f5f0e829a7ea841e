#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>

#include "cli.h"
#include "dlas/hw/cpu.h"

namespace dlas::cli {

void add_hw_command(CLI::App& app, Action& run) {
  auto* cmd = app.add_subcommand("hw", "Show the detected CPU: model, cores, caches, ISA features");
  auto json = std::make_shared<bool>(false);
  cmd->add_flag("--json", *json, "print one JSON object");
  cmd->callback([&run, json] {
    run = [json] {
      const CpuInfo& c = cpu_info();
      if (*json) {
        nlohmann::json j = {{"vendor", c.vendor},
                            {"model", c.model_name},
                            {"packages", c.packages},
                            {"cores", c.cores},
                            {"logical_processors", c.logical_processors},
                            {"l1d_bytes", c.l1d_bytes},
                            {"l2_bytes", c.l2_bytes},
                            {"l3_bytes", c.l3_bytes}};
        for (const auto& [name, on] : c.feature_list()) j["features"][name] = on;
        std::cout << j.dump(2) << "\n";
        return 0;
      }
      std::printf("cpu      %s (%s)\n", c.model_name.c_str(), c.vendor.c_str());
      std::printf("cores    %u (%u logical, %u package%s)\n", c.cores, c.logical_processors,
                  c.packages, c.packages == 1 ? "" : "s");
      std::printf("caches   L1d %llu KiB, L2 %llu KiB, L3 %llu KiB\n",
                  static_cast<unsigned long long>(c.l1d_bytes >> 10),
                  static_cast<unsigned long long>(c.l2_bytes >> 10),
                  static_cast<unsigned long long>(c.l3_bytes >> 10));
      std::printf("features");
      for (const auto& [name, on] : c.feature_list())
        if (on) std::printf(" %s", name.c_str());
      std::printf("\n");
      return 0;
    };
  });
}

}  // namespace dlas::cli

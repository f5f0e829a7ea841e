#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>

#include "cli.h"
#include "dlas/core/error.h"
#include "dlas/hw/cpu.h"
#include "dlas/hw/isa.h"
#include "dlas/hw/peak.h"

namespace dlas::cli {

void add_hw_command(CLI::App& app, Action& run) {
  auto* cmd = app.add_subcommand(
      "hw", "Show the detected CPU: model, cores, caches, ISA features; --peak measures peaks");
  auto json = std::make_shared<bool>(false);
  auto with_peak = std::make_shared<bool>(false);
  cmd->add_flag("--json", *json, "print one JSON object");
  cmd->add_flag("--peak", *with_peak,
                "also measure peak fp32 GFLOP/s per ISA path (1 and all threads) and memory "
                "bandwidth (about 1-2 s)");
  cmd->callback([&run, json, with_peak] {
    run = [json, with_peak] {
      const CpuInfo& c = cpu_info();
      const PeakInfo* pk = *with_peak ? &peak() : nullptr;
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
        if (pk) {
          // Unsupported paths are null (the CPU lacks them), never a made-up 0.
          for (const IsaPeak& p : pk->isas) {
            nlohmann::json& e = j["peak_gflops"][isa_name(p.isa)];
            if (p.supported)
              e = {{"1", p.gflops_single}, {"all", p.gflops_all}};
            else
              e = nullptr;
          }
          j["peak_threads"] = pk->threads;
          j["bandwidth_gbs"] = {
              {"read", pk->read_gbs}, {"copy", pk->copy_gbs}, {"triad", pk->triad_gbs}};
          j["bandwidth_buffer_bytes"] = pk->bandwidth_buffer_bytes;
          j["peak_seconds"] = pk->seconds;
        }
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
      if (pk) {
        std::printf("peak fp32 GFLOP/s (best of short runs)\n");
        std::printf("  %-12s %12s %12s\n", "isa", "1 thread", str(pk->threads, " threads").c_str());
        for (const IsaPeak& p : pk->isas) {
          if (p.supported)
            std::printf("  %-12s %12.1f %12.1f\n", isa_name(p.isa), p.gflops_single, p.gflops_all);
          else
            std::printf("  %-12s %12s %12s\n", isa_name(p.isa), "n/a", "n/a");
        }
        std::printf("memory bandwidth GB/s (%d threads, %zu MiB buffers)\n", pk->threads,
                    pk->bandwidth_buffer_bytes >> 20);
        std::printf("  read %.1f  copy %.1f  triad %.1f\n", pk->read_gbs, pk->copy_gbs,
                    pk->triad_gbs);
      }
      return 0;
    };
  });
}

}  // namespace dlas::cli

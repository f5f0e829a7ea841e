// `dlas hw --peak`: structure of the text and JSON output, and properties the measured
// peaks must have (never timing thresholds).
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "dlas/hw/isa.h"
#include "dlas/hw/peak.h"

namespace dlas {
namespace {

namespace fs = std::filesystem;

struct Result {
  int code;
  std::string out;
};

Result run_cli(const std::string& args) {
  const fs::path out =
      fs::temp_directory_path() / ("dlas_cli_hw_peak_" + std::to_string(::getpid()) + ".txt");
  const std::string cmd = std::string(DLAS_CLI_PATH) + " " + args + " >" + out.string();
  const int status = std::system(cmd.c_str());
  std::ifstream in(out);
  Result r{WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status),
           std::string(std::istreambuf_iterator<char>(in), {})};
  fs::remove(out);
  return r;
}

TEST(CliHwPeak, JsonHasEveryIsaAndBandwidth) {
  Result r = run_cli("hw --peak --json");
  ASSERT_EQ(r.code, 0) << r.out;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  ASSERT_TRUE(j.contains("peak_gflops"));
  const int threads = j.at("peak_threads").get<int>();
  EXPECT_GE(threads, 1);
  for (Isa isa : kAllIsas) {
    const nlohmann::json& e = j["peak_gflops"].at(isa_name(isa));
    if (!isa_supported(isa)) {
      EXPECT_TRUE(e.is_null()) << isa_name(isa);
      continue;
    }
    const double one = e.at("1").get<double>(), all = e.at("all").get<double>();
    EXPECT_GT(one, 0) << isa_name(isa);
    EXPECT_GT(all, 0) << isa_name(isa);
  }
  // The avx2 probe runs 8-lane FMAs where the scalar one runs 1-lane multiply + add:
  // a working probe is several times faster, never slower.
  if (isa_supported(Isa::kAvx2)) {
    EXPECT_GT(j["peak_gflops"]["avx2"]["1"].get<double>(),
              j["peak_gflops"]["scalar"]["1"].get<double>());
  }
  if (isa_supported(Isa::kAvx512)) {
    EXPECT_GT(j["peak_gflops"]["avx512"]["1"].get<double>(),
              j["peak_gflops"]["scalar"]["1"].get<double>());
  }
  // Every low-precision unit: measured where the CPU has it, null where it does not.
  const std::pair<const char*, Isa> units[] = {{"vnni-int8", Isa::kAvx512Vnni},
                                               {"avx512-bf16", Isa::kAvx512Bf16},
                                               {"avx512-fp16", Isa::kAvx512Fp16},
                                               {"amx-int8", Isa::kAmx},
                                               {"amx-bf16", Isa::kAmx}};
  for (const auto& [name, isa] : units) {
    const nlohmann::json& e = j["peak_unit_gops"].at(name);
    if (!isa_supported(isa)) {
      EXPECT_TRUE(e.is_null()) << name;
      continue;
    }
    if (e.is_null()) continue;  // AMX without the OS's tile permission
    EXPECT_GT(e.at("1").get<double>(), 0) << name;
    EXPECT_GT(e.at("all").get<double>(), 0) << name;
  }
  for (const char* key : {"read", "copy", "triad"})
    EXPECT_GT(j["bandwidth_gbs"].at(key).get<double>(), 0) << key;
  EXPECT_GE(j.at("bandwidth_buffer_bytes").get<double>(), 64.0 * (1 << 20));
  // The thread handoff: measured on two or more threads, 0 on one.
  if (j.at("peak_threads").get<int>() > 1)
    EXPECT_GT(j.at("handoff_ns").get<double>(), 0);
  else
    EXPECT_EQ(j.at("handoff_ns").get<double>(), 0);
  // Plain `hw --json` does not measure.
  Result plain = run_cli("hw --json");
  ASSERT_EQ(plain.code, 0);
  EXPECT_FALSE(nlohmann::json::parse(plain.out).contains("peak_gflops"));
}

TEST(CliHwPeak, TextListsEveryIsa) {
  Result r = run_cli("hw --peak");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("peak fp32 GFLOP/s"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("memory bandwidth"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("peak low-precision G op/s"), std::string::npos) << r.out;
  for (Isa isa : kAllIsas) {
    const std::string name = isa_name(isa);
    const size_t at = r.out.find("\n  " + name + " ");
    ASSERT_NE(at, std::string::npos) << name << "\n" << r.out;
    const std::string line = r.out.substr(at + 1, r.out.find('\n', at + 1) - at - 1);
    EXPECT_EQ(line.find("n/a") != std::string::npos, !isa_supported(isa)) << line;
  }
}

// The library API: cached per process, and gflops(isa, threads) interpolates sensibly.
TEST(HwPeak, CachedAndConsistent) {
  PeakOptions o;
  o.runs = 2;
  o.seconds_per_run = 0.003;
  o.bandwidth_buffer_bytes = 8 << 20;
  o.threads = 2;
  const PeakInfo p = measure_peak(o);
  ASSERT_EQ(p.isas.size(), std::size(kAllIsas));
  EXPECT_EQ(p.threads, 2);
  EXPECT_EQ(p.bandwidth_buffer_bytes, size_t{8} << 20);
  for (const IsaPeak& e : p.isas) {
    EXPECT_EQ(e.supported, isa_supported(e.isa));
    if (!e.supported) {
      EXPECT_EQ(p.gflops(e.isa, 2), 0);
      continue;
    }
    EXPECT_EQ(p.gflops(e.isa, 1), e.gflops_single);
    EXPECT_LE(p.gflops(e.isa, 64), std::max(e.gflops_all, e.gflops_single));
  }
  EXPECT_EQ(&peak(), &peak());
  // gops_for: a conv's arithmetic against its unit, f32 and emulated against the FMAs.
  const Isa best = detected_isa();
  EXPECT_EQ(p.gops_for("f32", best, 1), p.gflops(best, 1));
  EXPECT_EQ(p.gops_for("emulated", best, 2), p.gflops(best, 2));
  for (const UnitPeak& u : p.units) {
    if (!u.supported) continue;
    const std::string compute = std::string(u.name) == "vnni-int8"     ? "int8"
                                : std::string(u.name) == "avx512-bf16" ? "native-bf16"
                                : std::string(u.name) == "avx512-fp16" ? "native-fp16"
                                                                       : u.name;
    EXPECT_EQ(p.gops_for(compute, u.isa, 1), u.gops_single) << u.name;
    // A path below the unit's has no such unit: the FMA peak.
    EXPECT_EQ(p.gops_for(compute, Isa::kAvx512, 1), p.gflops(Isa::kAvx512, 1)) << u.name;
  }
}

}  // namespace
}  // namespace dlas

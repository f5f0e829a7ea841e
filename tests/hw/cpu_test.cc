// CPU detection checked against the kernel's view (/proc/cpuinfo flags).
#include <gtest/gtest.h>

#include <fstream>
#include <set>
#include <sstream>

#include "dlas/hw/cpu.h"

namespace dlas {
namespace {

std::set<std::string> proc_cpuinfo_flags() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("flags", 0) != 0) continue;
    std::istringstream ss(line.substr(line.find(':') + 1));
    std::set<std::string> flags;
    for (std::string f; ss >> f;) flags.insert(f);
    return flags;
  }
  return {};
}

TEST(HwCpu, FeaturesAgreeWithTheKernel) {
  const std::set<std::string> flags = proc_cpuinfo_flags();
  if (flags.empty()) GTEST_SKIP() << "/proc/cpuinfo has no flags line";
  // Flags every kernel of the last decade names: detection must agree both ways.
  const std::set<std::string> long_known = {"sse4_2",   "avx",     "fma",      "f16c",
                                            "avx2",     "avx512f", "avx512dq", "avx512cd",
                                            "avx512bw", "avx512vl"};
  for (const auto& [name, on] : cpu_info().feature_list()) {
    if (flags.count(name)) {
      EXPECT_TRUE(on) << name << " is in /proc/cpuinfo but not detected";
    }
    if (long_known.count(name)) {
      EXPECT_EQ(on, flags.count(name) == 1) << name;
    }
  }
}

TEST(HwCpu, FeatureImplicationsHold) {
  const CpuFeatures& f = cpu_info().features;
  if (f.avx2 || f.fma || f.f16c) {
    EXPECT_TRUE(f.avx);
  }
  for (bool sub : {f.avx512bw, f.avx512dq, f.avx512vl, f.avx512cd, f.avx512_vnni, f.avx512_bf16,
                   f.avx512_fp16, f.avx512vbmi})
    if (sub) {
      EXPECT_TRUE(f.avx512f);
    }
  if (f.amx_int8 || f.amx_bf16) {
    EXPECT_TRUE(f.amx_tile);
  }
}

TEST(HwCpu, TopologyAndCaches) {
  const CpuInfo& c = cpu_info();
  EXPECT_FALSE(c.vendor.empty());
  EXPECT_GE(c.logical_processors, c.cores);
  EXPECT_GE(c.cores, 1u);
  EXPECT_GT(c.l1d_bytes, 0u);
  EXPECT_GE(c.l2_bytes, c.l1d_bytes);
}

}  // namespace
}  // namespace dlas

// CPU detection (DLAS layer 6): what the machine running dlas can do. Detected
// once, from Debian's libcpuinfo plus cpuid/xgetbv for the features libcpuinfo
// 2022 does not know (AVX-VNNI, AVX512-FP16, AMX); a feature counts only when
// the OS also enables its register state.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace dlas {

struct CpuFeatures {
  bool sse42 = false, avx = false, avx2 = false, fma = false, f16c = false;
  bool avx512f = false, avx512bw = false, avx512dq = false, avx512vl = false, avx512cd = false;
  bool avx512_vnni = false, avx512_bf16 = false, avx512_fp16 = false, avx_vnni = false;
  bool avx512vbmi = false;  // vpermb / vpermi2b (the byte table lookup)
  bool amx_tile = false, amx_int8 = false, amx_bf16 = false;
};

struct CpuInfo {
  std::string vendor;      // "Intel", "AMD", ...
  std::string model_name;  // e.g. "AMD EPYC 7B13"
  // cpuid's display family and model (leaf 1, extended fields folded in; 0: unknown). Virtual
  // machines often report a generic model name ("AMD EPYC" for Zen 3, Zen 4 and Zen 5 alike):
  // these tell such CPUs apart.
  uint32_t family = 0, model = 0;
  // "family 26 model 2" (hexadecimal in vendor documents: 1Ah/02h); "" when unknown.
  std::string signature() const;
  uint32_t packages = 0, cores = 0, logical_processors = 0;
  uint64_t l1d_bytes = 0, l2_bytes = 0, l3_bytes = 0;  // per instance (L3: shared)
  CpuFeatures features;

  // (name, present) for every feature, in a fixed order; names follow /proc/cpuinfo.
  std::vector<std::pair<std::string, bool>> feature_list() const;
};

// Detected once per process; thread-safe.
const CpuInfo& cpu_info();

}  // namespace dlas

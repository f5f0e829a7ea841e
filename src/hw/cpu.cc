#include "dlas/hw/cpu.h"

#include <cpuid.h>
#include <cpuinfo.h>

#include <cstring>

#include "dlas/core/error.h"

namespace dlas {

namespace {

struct Regs {
  unsigned a = 0, b = 0, c = 0, d = 0;
};

Regs cpuid(unsigned leaf, unsigned sub) {
  Regs r;
  if (!__get_cpuid_count(leaf, sub, &r.a, &r.b, &r.c, &r.d)) r = {};
  return r;
}

// XCR0: which register states the OS saves (bit 1-2 SSE/AVX, 5-7 AVX-512, 17-18 AMX).
uint64_t xgetbv0() {
  const Regs l1 = cpuid(1, 0);
  if (!(l1.c & (1u << 27))) return 0;  // no OSXSAVE
  unsigned lo, hi;
  __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  return (static_cast<uint64_t>(hi) << 32) | lo;
}

CpuInfo detect() {
  CpuInfo info;
  const bool have_cpuinfo = cpuinfo_initialize();
  if (have_cpuinfo) {
    info.packages = cpuinfo_get_packages_count();
    info.cores = cpuinfo_get_cores_count();
    info.logical_processors = cpuinfo_get_processors_count();
    if (info.packages) info.model_name = cpuinfo_get_package(0)->name;
    if (cpuinfo_get_l1d_caches_count()) info.l1d_bytes = cpuinfo_get_l1d_cache(0)->size;
    if (cpuinfo_get_l2_caches_count()) info.l2_bytes = cpuinfo_get_l2_cache(0)->size;
    if (cpuinfo_get_l3_caches_count()) info.l3_bytes = cpuinfo_get_l3_cache(0)->size;
    if (info.cores) {
      switch (cpuinfo_get_core(0)->vendor) {
        case cpuinfo_vendor_intel:
          info.vendor = "Intel";
          break;
        case cpuinfo_vendor_amd:
          info.vendor = "AMD";
          break;
        default:
          info.vendor = "other";
          break;
      }
    }
  }
  // Features straight from cpuid, gated on the OS-enabled state in XCR0, so that
  // libcpuinfo's gaps (AVX-VNNI, AVX512-FP16, AMX) are covered the same way.
  const uint64_t xcr0 = xgetbv0();
  const bool os_avx = (xcr0 & 0x6) == 0x6;
  const bool os_avx512 = os_avx && (xcr0 & 0xe0) == 0xe0;
  const bool os_amx = (xcr0 & 0x60000) == 0x60000;
  const Regs l1 = cpuid(1, 0), l7 = cpuid(7, 0), l7s1 = cpuid(7, 1);
  if (l1.a) {
    info.family = (l1.a >> 8) & 0xf;
    info.model = (l1.a >> 4) & 0xf;
    if (info.family == 0xf) info.family += (l1.a >> 20) & 0xff;
    if (info.family == 6 || info.family >= 0xf) info.model += ((l1.a >> 16) & 0xf) << 4;
  }
  CpuFeatures& f = info.features;
  f.sse42 = l1.c & (1u << 20);
  f.avx = os_avx && (l1.c & (1u << 28));
  f.fma = f.avx && (l1.c & (1u << 12));
  f.f16c = f.avx && (l1.c & (1u << 29));
  f.avx2 = f.avx && (l7.b & (1u << 5));
  f.avx512f = os_avx512 && (l7.b & (1u << 16));
  f.avx512dq = f.avx512f && (l7.b & (1u << 17));
  f.avx512cd = f.avx512f && (l7.b & (1u << 28));
  f.avx512bw = f.avx512f && (l7.b & (1u << 30));
  f.avx512vl = f.avx512f && (l7.b & (1u << 31));
  f.avx512_vnni = f.avx512f && (l7.c & (1u << 11));
  f.avx512vbmi = f.avx512f && (l7.c & (1u << 1));
  f.avx512_fp16 = f.avx512f && (l7.d & (1u << 23));
  f.avx512_bf16 = f.avx512f && (l7s1.a & (1u << 5));
  f.avx_vnni = f.avx && (l7s1.a & (1u << 4));
  f.amx_tile = os_amx && (l7.d & (1u << 24));
  f.amx_int8 = f.amx_tile && (l7.d & (1u << 25));
  f.amx_bf16 = f.amx_tile && (l7.d & (1u << 22));
  if (info.vendor.empty()) {
    const Regs v = cpuid(0, 0);
    char s[13] = {};
    std::memcpy(s, &v.b, 4);
    std::memcpy(s + 4, &v.d, 4);
    std::memcpy(s + 8, &v.c, 4);
    info.vendor = s;
  }
  return info;
}

}  // namespace

std::vector<std::pair<std::string, bool>> CpuInfo::feature_list() const {
  const CpuFeatures& f = features;
  return {{"sse4_2", f.sse42},
          {"avx", f.avx},
          {"fma", f.fma},
          {"f16c", f.f16c},
          {"avx2", f.avx2},
          {"avx512f", f.avx512f},
          {"avx512dq", f.avx512dq},
          {"avx512cd", f.avx512cd},
          {"avx512bw", f.avx512bw},
          {"avx512vl", f.avx512vl},
          {"avx512vbmi", f.avx512vbmi},
          {"avx512_vnni", f.avx512_vnni},
          {"avx512_bf16", f.avx512_bf16},
          {"avx512_fp16", f.avx512_fp16},
          {"avx_vnni", f.avx_vnni},
          {"amx_tile", f.amx_tile},
          {"amx_int8", f.amx_int8},
          {"amx_bf16", f.amx_bf16}};
}

std::string CpuInfo::signature() const {
  if (family == 0) return "";
  return "family " + std::to_string(family) + " model " + std::to_string(model);
}

const CpuInfo& cpu_info() {
  static const CpuInfo info = detect();
  return info;
}

}  // namespace dlas

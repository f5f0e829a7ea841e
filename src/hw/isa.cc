#include "dlas/hw/isa.h"

#include <atomic>
#include <cstdlib>
#include <mutex>
#include <string>

#include "dlas/core/error.h"
#include "dlas/hw/amx.h"
#include "dlas/hw/cpu.h"

namespace dlas {

const char* isa_name(Isa isa) {
  switch (isa) {
    case Isa::kScalar:
      return "scalar";
    case Isa::kAvx2:
      return "avx2";
    case Isa::kAvx2Vnni:
      return "avx2-vnni";
    case Isa::kAvx512:
      return "avx512";
    case Isa::kAvx512Vnni:
      return "avx512-vnni";
    case Isa::kAvx512Bf16:
      return "avx512-bf16";
    case Isa::kAvx512Fp16:
      return "avx512-fp16";
    case Isa::kAmx:
      return "amx";
  }
  return "?";
}

Isa parse_isa(std::string_view name) {
  for (Isa isa : kAllIsas)
    if (name == isa_name(isa)) return isa;
  std::string names;
  for (Isa isa : kAllIsas) names += std::string(names.empty() ? "" : ", ") + isa_name(isa);
  fail(ErrorKind::kUsage, "unknown ISA '", name, "' (expected one of ", names, ")");
}

bool isa_supported(Isa isa) {
  const CpuFeatures& f = cpu_info().features;
  switch (isa) {
    case Isa::kScalar:
      return true;
    case Isa::kAvx2:
      return f.avx2 && f.fma && f.f16c;
    case Isa::kAvx2Vnni:
      return isa_supported(Isa::kAvx2) && f.avx_vnni;
    case Isa::kAvx512:
      return isa_supported(Isa::kAvx2) && f.avx512f && f.avx512bw && f.avx512dq && f.avx512vl;
    case Isa::kAvx512Vnni:
      return isa_supported(Isa::kAvx512) && f.avx512_vnni;
    case Isa::kAvx512Bf16:
      return isa_supported(Isa::kAvx512Vnni) && f.avx512_bf16;
    case Isa::kAvx512Fp16:
      return isa_supported(Isa::kAvx512Bf16) && f.avx512_fp16;
    case Isa::kAmx:
      // Tile data also needs the OS's per-process permission (asked once, here first).
      return isa_supported(Isa::kAvx512Fp16) && f.amx_tile && f.amx_int8 && f.amx_bf16 &&
             amx_permitted();
  }
  return false;
}

Isa detected_isa() {
  Isa best = Isa::kScalar;
  for (Isa isa : kAllIsas)
    if (isa_supported(isa)) best = isa;
  return best;
}

namespace {
std::atomic<int> g_active{-1};
std::once_flag g_env_once;

void read_env() {
  std::call_once(g_env_once, [] {
    Isa isa = detected_isa();
    if (const char* env = std::getenv("DLAS_ISA"); env && *env) {
      Isa wanted;
      try {
        wanted = parse_isa(env);
      } catch (const Error& e) {
        fail(ErrorKind::kUsage, "DLAS_ISA: ", e.what());
      }
      if (!isa_supported(wanted))
        fail(ErrorKind::kUnsupported, "DLAS_ISA=", env, ": this CPU supports up to ",
             isa_name(detected_isa()));
      isa = wanted;
    }
    int expected = -1;
    g_active.compare_exchange_strong(expected, static_cast<int>(isa));
  });
}
}  // namespace

Isa active_isa() {
  if (g_active.load(std::memory_order_relaxed) < 0) read_env();
  return static_cast<Isa>(g_active.load(std::memory_order_relaxed));
}

void set_active_isa(Isa isa) {
  if (!isa_supported(isa))
    fail(ErrorKind::kUnsupported, "ISA ", isa_name(isa), " is not supported by this CPU (it has ",
         isa_name(detected_isa()), ")");
  g_active.store(static_cast<int>(isa));
}

bool isa_emulated() { return active_isa() < detected_isa(); }

std::vector<Isa> supported_isas() {
  std::vector<Isa> out;
  for (Isa isa : kBaseIsas)
    if (isa_supported(isa)) out.push_back(isa);
  return out;
}

std::vector<Isa> supported_isa_levels() {
  std::vector<Isa> out;
  for (Isa isa : kAllIsas)
    if (isa_supported(isa)) out.push_back(isa);
  return out;
}

}  // namespace dlas

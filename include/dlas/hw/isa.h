// Instruction-set paths (DLAS layer 6). Every fast kernel exists once per ISA
// path, each in its own translation unit; which path runs is decided once per
// process: the best the CPU supports, lowered by `DLAS_ISA` or `--isa` so one
// machine can emulate weaker hardware. Rows measured on a lowered path are
// labelled emulated, never passed off as other hardware.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace dlas {

// Ordered by capability. The first three are the vector-width base paths every f32 kernel
// family has (scalar, AVX2, AVX-512); the others add the integer and 16-bit float units of
// later CPUs on top of their base path (int8, fp16 and bf16 kernels dispatch on them):
//   avx2-vnni    AVX2 + AVX-VNNI (vpdpbusd on ymm; Alder Lake and later)
//   avx512-vnni  AVX-512 + AVX512-VNNI (Cascade Lake, Zen 4)
//   avx512-bf16  avx512-vnni + AVX512-BF16 (vdpbf16ps; Cooper Lake, Zen 4)
//   avx512-fp16  avx512-bf16 + AVX512-FP16 (native half arithmetic; Sapphire Rapids)
//   amx          avx512-fp16 + AMX-TILE/INT8/BF16 (Sapphire Rapids), with the OS's permission
// A path is supported when the CPU has its own features and its base path's; avx2-vnni is
// not needed by avx512 (a Skylake-X has avx512 but no avx2-vnni). A kernel family picks
// the highest path it has that is <= the active one and supported (isa_dispatch.h).
enum class Isa : int {
  kScalar = 0,      // portable C++, always built: the oracle
  kAvx2 = 1,        // AVX2 + FMA (+F16C)
  kAvx2Vnni = 2,    // kAvx2 + AVX-VNNI
  kAvx512 = 3,      // AVX-512 F/BW/DQ/VL
  kAvx512Vnni = 4,  // kAvx512 + AVX512-VNNI
  kAvx512Bf16 = 5,  // kAvx512Vnni + AVX512-BF16
  kAvx512Fp16 = 6,  // kAvx512Bf16 + AVX512-FP16
  kAmx = 7,         // kAvx512Fp16 + AMX-TILE, AMX-INT8, AMX-BF16
};

inline constexpr Isa kAllIsas[] = {Isa::kScalar,     Isa::kAvx2,       Isa::kAvx2Vnni,
                                   Isa::kAvx512,     Isa::kAvx512Vnni, Isa::kAvx512Bf16,
                                   Isa::kAvx512Fp16, Isa::kAmx};
// The f32 vector paths: every path runs the f32 kernels of its base.
inline constexpr Isa kBaseIsas[] = {Isa::kScalar, Isa::kAvx2, Isa::kAvx512};

// The vector-width base path of a path (kAvx2Vnni -> kAvx2, kAmx -> kAvx512, ...).
constexpr Isa base_isa(Isa isa) {
  return isa >= Isa::kAvx512 ? Isa::kAvx512 : isa >= Isa::kAvx2 ? Isa::kAvx2 : Isa::kScalar;
}

// "scalar", "avx2", "avx2-vnni", "avx512", "avx512-vnni", "avx512-bf16", "avx512-fp16", "amx"
const char* isa_name(Isa isa);
// Throws kUsage listing the valid names.
Isa parse_isa(std::string_view name);
// Whether this CPU (and OS) can run code of the path.
bool isa_supported(Isa isa);
// The best supported path.
Isa detected_isa();
// The path kernels dispatch to: detected_isa(), or DLAS_ISA when set (read once).
Isa active_isa();
// Forces the path for this process (CLI --isa). Throws kUnsupported when the CPU
// cannot run it (with the detected path in the message).
void set_active_isa(Isa isa);
// active_isa() < detected_isa(): results on this path emulate weaker hardware.
bool isa_emulated();
// Every supported base path (kBaseIsas), lowest first: the f32 kernel tests iterate it.
std::vector<Isa> supported_isas();
// Every supported path (kAllIsas), lowest first: the int8 / fp16 / bf16 tests iterate it.
std::vector<Isa> supported_isa_levels();

}  // namespace dlas

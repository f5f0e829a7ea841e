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

// Ordered: a higher path needs every feature of the lower ones.
enum class Isa : int {
  kScalar = 0,  // portable C++, always built: the oracle
  kAvx2 = 1,    // AVX2 + FMA (+F16C)
  kAvx512 = 2,  // AVX-512 F/BW/DQ/VL
};

inline constexpr Isa kAllIsas[] = {Isa::kScalar, Isa::kAvx2, Isa::kAvx512};

const char* isa_name(Isa isa);  // "scalar", "avx2", "avx512"
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
// Every supported path, lowest first (tests iterate over it).
std::vector<Isa> supported_isas();

}  // namespace dlas

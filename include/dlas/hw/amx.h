// AMX tile-data permission. Linux enables the AMX tile state (XTILEDATA, xfeature 18) per
// process on request: arch_prctl(ARCH_REQ_XCOMP_PERM, 18) once before the first tile
// instruction, else that instruction faults (SIGILL). The one place dlas asks; every AMX
// kernel family (int8 here, bf16 in the 16-bit convs) calls amx_require() at prepare.
#pragma once

namespace dlas {

// Asks the kernel once per process (thread-safe); true when tile data may be used. Only
// meaningful on CPUs with AMX (isa.cc checks the CPUID bits first).
bool amx_permitted();
// Throws kUnsupported (naming `what`) unless the CPU has AMX and the permission is granted.
void amx_require(const char* what);

}  // namespace dlas

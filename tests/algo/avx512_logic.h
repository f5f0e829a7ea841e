// The AVX-512 kernels' code instantiated with 16-lane vectors in an AVX2 translation
// unit (avx512_logic__avx2.cc; GCC lowers each 64-byte vector to two ymm), so the
// exact template logic the __avx512.cc TUs compile is tested on AVX2-only machines.
// Derived from the kernel lists: one entry per kAvx512 entry of f32_gemm.inc.
// Runnable when isa_supported(Isa::kAvx2).
#pragma once

#include <vector>

#include "algo/microkernels/f32-gemm/f32_gemm.h"
#include "algo/microkernels/f32-vepilogue/f32_vepilogue.h"

namespace dlas::test {

// Named like the kernel they mirror, isa = kAvx2 (what they need to run).
const std::vector<ukernel::F32GemmUkernel>& avx512_logic_gemm_ukernels();
ukernel::F32VEpilogueFn avx512_logic_vepilogue();

}  // namespace dlas::test

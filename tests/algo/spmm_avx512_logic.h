// The AVX-512 SpMM kernels' template logic instantiated with 16-lane vectors in an AVX2
// translation unit (spmm_avx512_logic__avx2.cc; GCC lowers each 64-byte vector to two
// ymm), so the exact code the __avx512.cc TU compiles is tested on AVX2-only machines.
// One entry per kAvx512 entry of f32_spmm.inc, isa = kAvx2 (what they need to run).
#pragma once

#include <vector>

#include "algo/microkernels/f32-spmm/f32_spmm.h"

namespace dlas::test {

const std::vector<ukernel::F32SpmmUkernel>& avx512_logic_spmm_ukernels();

}  // namespace dlas::test

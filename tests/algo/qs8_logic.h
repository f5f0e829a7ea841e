// The int8 kernels of the paths this machine may lack (AVX-VNNI, AVX-512, AVX512-VNNI,
// AMX), instantiated from the very templates their ISA TUs compile, with exact scalar
// models of vpdpbusd / vpmaddwd / vfmadd and of the AMX tiles (tdpbsud), in an AVX2
// translation unit (qs8_logic__avx2.cc). One entry per such kernel of qs8_gemm.inc, named
// like it; isa = kAvx2 (what they need to run).
#pragma once

#include <vector>

#include "algo/microkernels/qs8_dwconv.h"
#include "algo/microkernels/qs8_gemm.h"

namespace dlas::test {

const std::vector<ukernel::QS8GemmUkernel>& qs8_logic_gemm_ukernels();
// qs8_dwconv_16lane__avx512's template at 16 lanes.
ukernel::QS8DwFn qs8_logic_dwconv_16lane();

}  // namespace dlas::test

// The native 16-bit GEMM kernels' code (f16_gemm_template.h, bf16_gemm_template.h) instantiated in
// an AVX2 translation unit (h16_native_logic__avx2.cc) with the exact instruction models of
// h16_emulation.h instead of the AVX512-FP16 / AVX512-BF16 intrinsics: the same tiles, k
// grouping and flushes as every entry of f16_gemm.inc and bf16_gemm.inc, runnable (slowly) on
// any AVX2 machine. Entries are named like the kernel they mirror with isa = kAvx2.
#pragma once

#include <vector>

#include "algo/microkernels/h16-gemm/h16_gemm.h"

namespace dlas::test {

const std::vector<ukernel::H16GemmUkernel>& h16_native_logic_ukernels();

}  // namespace dlas::test

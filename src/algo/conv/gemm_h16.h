// Internal: the 16-bit gemm conv with an explicit native microkernel, so tests can run the
// whole algorithm (packing in k groups, flushes, epilogue) on exact software models of the
// native kernels (tests/algo/h16_native_logic__avx2.cc) on machines without the instructions.
#pragma once

#include <memory>

#include "algo/microkernels/h16-gemm/h16_gemm.h"
#include "dlas/algo/hconv.h"

namespace dlas::hconv_detail {

// Like gemm's prepare(), but runs `uk` (of p.w_type) whatever the ISA; the ukernel knob is
// ignored, the others are validated. isa picks the conversion and epilogue kernels.
std::unique_ptr<PreparedConv> prepare_gemm_hconv_with(const ConvProblem& p, const ConvWeights& w,
                                                      const Knobs& knobs, Isa isa,
                                                      const ukernel::H16GemmUkernel& uk);

}  // namespace dlas::hconv_detail

// direct on blocked layouts (nchw8c / nchw16c). Internal header: the accessor is listed in
// conv_algorithms.inc; prepare_direct_nchwc lets tests run the algorithm with a given kernel
// set (the test-only 16-lane AVX2 instantiation).
#pragma once

#include <memory>

#include "algo/microkernels/f32-nchwc/f32_nchwc.h"
#include "dlas/algo/conv.h"

namespace dlas {

const ConvAlgorithm& direct_nchwc_conv_algorithm();

// The algorithm's prepare() with an explicit kernel set (its lanes must equal the output
// layout's block); `isa` still picks the apply_epilogue path for non-clamp activations.
std::unique_ptr<PreparedConv> prepare_direct_nchwc(const ConvProblem& p, const ConvWeights& w,
                                                   const Knobs& knobs, Isa isa,
                                                   const ukernel::F32NchwcUkernels& set);

}  // namespace dlas

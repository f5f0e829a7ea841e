// depthwise on blocked layouts (nchw8c / nchw16c). Internal header: the accessor is listed
// in conv_algorithms.inc; prepare_depthwise_nchwc lets tests run the algorithm with a given
// kernel set (the test-only 16-lane AVX2 instantiation).
#pragma once

#include <memory>

#include "algo/microkernels/f32-dwnchwc/f32_dwnchwc.h"
#include "dlas/algo/conv.h"

namespace dlas {

const ConvAlgorithm& depthwise_nchwc_conv_algorithm();

// The algorithm's prepare() with an explicit kernel set (its lanes must equal the layout's
// block); `isa` still picks the apply_epilogue path for non-clamp activations.
std::unique_ptr<PreparedConv> prepare_depthwise_nchwc(const ConvProblem& p, const ConvWeights& w,
                                                      const Knobs& knobs, Isa isa,
                                                      const ukernel::F32DwNchwcUkernels& set);

}  // namespace dlas

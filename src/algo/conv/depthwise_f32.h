// depthwise: the specialised algorithm for groups == C convolutions (channel multiplier
// K/C >= 1), any kernel size, stride, padding and dilation. Internal header: the
// accessor is listed in conv_algorithms.inc; prepare_depthwise lets tests run the
// algorithm with a given kernel set (the test-only 16-lane AVX2 instantiation).
#pragma once

#include <memory>

#include "algo/microkernels/f32-dwconv/f32_dwconv.h"
#include "dlas/algo/conv.h"

namespace dlas {

const ConvAlgorithm& depthwise_conv_algorithm();

// The algorithm's prepare() with an explicit kernel set; `isa` still picks the
// apply_epilogue path for non-clamp activations.
std::unique_ptr<PreparedConv> prepare_depthwise(const ConvProblem& p, const float* weights,
                                                const float* bias, const Knobs& knobs, Isa isa,
                                                const ukernel::F32DwconvKernels& kernels);

}  // namespace dlas

// depthwise on blocked layouts (nchw8c / nchw16c), f32 and bf16. Internal header: the
// accessor is listed in conv_algorithms.inc; prepare_depthwise_nchwc lets tests run the
// algorithm with a given kernel set (the test-only 16-lane AVX2 instantiation); the 16-bit
// `depthwise` (widened_h16.cc) hands bf16 blocks to prepare_bf16_blocked_depthwise.
#pragma once

#include <memory>

#include "algo/microkernels/bf16-dwnchwc/bf16_dwnchwc.h"
#include "algo/microkernels/f32-dwnchwc/f32_dwnchwc.h"
#include "dlas/algo/conv.h"

namespace dlas {

const ConvAlgorithm& depthwise_nchwc_conv_algorithm();

// The algorithm's prepare() with an explicit kernel set (its lanes must equal the layout's
// block); `isa` still picks the apply_epilogue path for non-clamp activations.
std::unique_ptr<PreparedConv> prepare_depthwise_nchwc(const ConvProblem& p, const ConvWeights& w,
                                                      const Knobs& knobs, Isa isa,
                                                      const ukernel::F32DwNchwcUkernels& set);

// bf16 depthwise (multiplier 1) on bf16 nchw16c blocks in and out, on a path with a
// bf16-dwnchwc set: the blocked tiles reading and writing bf16 (ConvCompute::kF32On16Bit),
// equal to the widened f32 twin bit for bit. Knobs: the f32 algorithm's. `set` null: the
// path's production set.
bool bf16_blocked_depthwise_applies(const ConvProblem& p, Isa isa);
std::unique_ptr<PreparedConv> prepare_bf16_blocked_depthwise(
    const ConvProblem& p, const ConvWeights& w, const Knobs& knobs, Isa isa,
    const ukernel::Bf16DwNchwcUkernels* set = nullptr);

}  // namespace dlas

// A conv node of an optimized graph as the CUDA plan and the GPU tuner see it: the
// cuda::ConvShape, the fused epilogue, and the layer key GPU tuning records match on.
#pragma once

#include <optional>
#include <string>

#include "dlas/algo/cuda_conv.h"
#include "dlas/model/graph.h"

namespace dlas::cuda {

struct ConvNode {
  ConvShape shape;
  Activation act = Activation::kNone;
  float p0 = 0, p1 = 0;
  bool has_bias = false, has_residual = false;
  // "c64_h56_w56_k64_r3x3_s1x1_p1x1_d1x1_g1_n1_o56x56_relu_res": the shape, the
  // activation, "_res" with a residual and "_nobias" without a bias.
  std::string layer_key() const;
};

// The f32 Conv / FusedConv `n` of inferred graph `g` with constant 4-D weights and explicit
// pads; nullopt otherwise (why: set to the reason).
std::optional<ConvNode> conv_node(const Graph& g, const Node& n, std::string* why = nullptr);

}  // namespace dlas::cuda

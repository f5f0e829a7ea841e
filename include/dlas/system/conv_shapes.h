// Conv layer shapes of a graph as ConvProblems, and the shape-list text files
// (bench/shapes/<model>.txt) the conv microbenchmarks read: one unique
// ConvProblem::key() per line, optionally followed by "# <first node> x<count>".
// Kept out of dlas/algo/conv.h so the algorithm layer does not depend on the graph IR.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "dlas/algo/conv.h"
#include "dlas/model/graph.h"

namespace dlas {

struct ConvLayer {
  std::string node;  // node name
  ConvProblem problem;
};

// The ConvProblem of one 2-D Conv / FusedConv node with a 4-D input, a constant 4-D
// weight and explicit pads (auto_pad NOTSET), carrying bias and the fused epilogue and,
// for f16 / bf16 input values, the 16-bit types; nullopt for any other node.
std::optional<ConvProblem> conv_problem_of(const Graph& graph, const Node& node);

// The geometry of a 2-D convolution node (Conv, FusedConv, the fused int8 convs, ONNX's
// integer convs) with input shape x and weight shape w, both rank 4: sizes, strides,
// dilations, explicit pads, groups and the fused activation (the activation /
// activation_params attributes, absent on a plain Conv). Bias, residual, element types and
// auto_pad are the caller's.
ConvProblem conv_geometry(const Node& node, const Shape& x, const Shape& w);

// One conv node as the engine lowers it and the tuner measures it: a 2-D Conv / FusedConv
// on f32, f16 or bf16 values, or an int8 QFusedConv, with constant weights (and bias) of
// its types. The problem carries the element types (int8: the quantization too).
struct ConvNode {
  ConvProblem problem;
  const Tensor* w = nullptr;    // the weights' constant, of problem.w_type
  const Tensor* b = nullptr;    // the bias' constant (f32, the 16-bit type, or s32), or null
  std::vector<float> w_scale;   // int8: the per-output-channel weight scales
  std::vector<float> bias_f32;  // 16-bit: the bias widened exactly to f32
  // The view prepare() takes (pointing into the graph's constants and this object).
  ConvWeights weights() const;
  // The nonzero share of f32 weights (pruning); 1 for the other types.
  double density() const;
};
// nullopt for any other node, and for a conv whose weights or bias are not constants of
// its types (the reference kernel runs those). Throws like the problem's validate().
std::optional<ConvNode> conv_node_of(const Graph& graph, const Node& node);

// Every 2-D Conv / FusedConv node of an inferred graph with a 4-D input and a constant
// 4-D weight, in node order. The problem carries bias and the fused epilogue, as the
// Plan lowers it.
std::vector<ConvLayer> conv_layers(const Graph& graph);

struct ConvShape {
  ConvProblem problem;  // shape only: no bias, no epilogue (the key carries neither)
  std::string node;     // first node with this key ("" when the line has no comment)
  int64_t count = 1;    // layers of the model with this key
};

// Unique keys in first-appearance order, with the first node's name and the count.
std::vector<ConvShape> unique_conv_shapes(const std::vector<ConvLayer>& layers);

// The shape-list file text: `# <header>` comment lines, then "<key>  # <node> x<count>" lines.
std::string format_conv_shape_list(const std::vector<ConvShape>& shapes,
                                   const std::vector<std::string>& header);
// Parses shape-list text: blank lines and lines starting with '#' are skipped, a
// "# <node> x<count>" comment after a key is optional. Errors (kInvalidInput) name the line.
std::vector<ConvShape> parse_conv_shape_list(std::string_view text);

// bench/shapes/<model>.txt for a zoo model at its default options (batch 1): the file
// dlas_gen_shapes writes and tests/system/bench_shapes_test.cc checks is current.
std::string zoo_conv_shape_list(std::string_view model);

}  // namespace dlas

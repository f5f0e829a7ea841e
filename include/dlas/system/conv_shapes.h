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
// weight and explicit pads (auto_pad NOTSET), carrying bias and the fused epilogue;
// nullopt for any other node. The Plan lowers convolutions through it.
std::optional<ConvProblem> conv_problem_of(const Graph& graph, const Node& node);

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

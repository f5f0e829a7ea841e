// The reference runtime (DLAS layer 5): interprets an inferred graph node by
// node with the reference kernels, freeing each intermediate after its last use.
#pragma once

#include <string>
#include <vector>

#include "dlas/model/graph.h"

namespace dlas {

class ReferenceExecutor {
 public:
  // `graph` must be inferred; throws kUnsupported when an op has no reference kernel.
  explicit ReferenceExecutor(Graph graph);
  const Graph& graph() const { return graph_; }
  // One tensor per graph input, in order; dtype and shape must match exactly
  // (kInvalidInput naming the input otherwise). Returns one tensor per graph output.
  std::vector<Tensor> run(const std::vector<Tensor>& inputs) const;

 private:
  Graph graph_;
};

}  // namespace dlas

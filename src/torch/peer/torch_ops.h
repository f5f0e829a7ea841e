// The libtorch peer's op mapping, shared with training (src/torch/train/): one dlas node
// interpreted with ATen operators. Internal to the torch translation units (it includes
// ATen); the calls are autograd-transparent, so under grad mode the results carry
// gradients back to the input tensors.
#pragma once

#include <ATen/ATen.h>

#include <string_view>
#include <vector>

#include "dlas/model/graph.h"

namespace dlas::torch_ops {

at::ScalarType scalar_type(DType t);
// A torch copy of a dlas tensor (owns its memory).
at::Tensor to_torch(const Tensor& t);
// A dlas copy of a torch tensor, converted to `dtype`.
Tensor from_torch(const at::Tensor& value, DType dtype);

// True when the peer maps `op`.
bool is_mapped(std::string_view op);
// Runs `node` on `inputs` (one per node input; undefined for absent optional ones) and
// returns one tensor per output. kUnsupported naming the node for unmapped ops or
// attributes; libtorch errors become kRuntime naming the node.
std::vector<at::Tensor> run_node(const Node& node, std::vector<at::Tensor> inputs);

}  // namespace dlas::torch_ops

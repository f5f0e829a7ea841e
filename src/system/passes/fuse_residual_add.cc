#include "dlas/system/passes.h"
#include "system/passes/pass_util.h"

namespace dlas {

int fuse_residual_add(Graph& graph) {
  auto uses = passes::use_counts(graph);
  auto prod = passes::producers(graph);
  std::vector<bool> dead(graph.nodes.size(), false);
  int fused = 0;
  for (size_t ai = 0; ai < graph.nodes.size(); ++ai) {
    const Node& add = graph.nodes[ai];
    if (add.op != "Add" || add.inputs.size() != 2) continue;
    const ValueInfo& out = graph.value(add.outputs[0]);
    if (!is_float(out.dtype)) continue;  // f16 / bf16 convs fuse their residual too
    // Prefer the operand computed later: the other one is then long finished.
    int pick = -1;
    size_t pick_at = 0;
    for (int side = 0; side < 2; ++side) {
      auto it = prod.find(add.inputs[side]);
      if (it == prod.end() || dead[it->second]) continue;
      const Node& conv = graph.nodes[it->second];
      const std::string& other = add.inputs[1 - side];
      if (!passes::conv_without_epilogue(conv) || uses[conv.outputs[0]] != 1 ||
          graph.value(other).shape != out.shape || graph.value(conv.outputs[0]).shape != out.shape)
        continue;
      if (pick < 0 || it->second > pick_at) pick = side, pick_at = it->second;
    }
    if (pick < 0) continue;
    Node& conv = graph.nodes[pick_at];
    passes::make_fused(conv);
    conv.inputs.resize(4);
    conv.inputs[3] = add.inputs[1 - pick];
    conv.outputs[0] = add.outputs[0];
    dead[ai] = true;
    ++fused;
  }
  passes::erase_nodes(graph, dead);
  graph.infer();
  return fused;
}

}  // namespace dlas

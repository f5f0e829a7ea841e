#include "dlas/system/passes.h"
#include "system/passes/pass_util.h"

namespace dlas {

int fuse_activation(Graph& graph) {
  auto uses = passes::use_counts(graph);
  auto prod = passes::producers(graph);
  std::vector<bool> dead(graph.nodes.size(), false);
  int fused = 0;
  for (size_t ai = 0; ai < graph.nodes.size(); ++ai) {
    if (dead[ai]) continue;
    const Node& act = graph.nodes[ai];
    auto it = prod.find(act.inputs.empty() ? std::string() : act.inputs[0]);
    if (it == prod.end() || dead[it->second]) continue;
    Node& conv = graph.nodes[it->second];
    if (!passes::is_conv(conv) || conv.attr_string("activation", "none") != "none") continue;
    const std::string& y = conv.outputs[0];
    std::string name;
    std::vector<float> params;
    std::string new_output = act.outputs[0];
    size_t extra_dead = graph.nodes.size();
    if (uses[y] == 1) {
      if (!passes::activation_of(graph, act, name, params)) continue;
    } else if (uses[y] == 2 && act.op == "Sigmoid" && uses[act.outputs[0]] == 1) {
      // SiLU as exported: s = Sigmoid(y); z = Mul(y, s) (either operand order).
      for (size_t mi = 0; mi < graph.nodes.size(); ++mi) {
        const Node& mul = graph.nodes[mi];
        if (mul.op != "Mul" || mul.inputs.size() != 2 || dead[mi]) continue;
        if ((mul.inputs[0] == y && mul.inputs[1] == act.outputs[0]) ||
            (mul.inputs[1] == y && mul.inputs[0] == act.outputs[0])) {
          name = "silu";
          new_output = mul.outputs[0];
          extra_dead = mi;
          break;
        }
      }
    }
    if (name.empty()) continue;
    passes::make_fused(conv);
    conv.attrs["activation"] = name;
    if (!params.empty()) conv.attrs["activation_params"] = params;
    conv.outputs[0] = new_output;
    dead[ai] = true;
    if (extra_dead < graph.nodes.size()) dead[extra_dead] = true;
    ++fused;
  }
  passes::erase_nodes(graph, dead);
  graph.infer();
  return fused;
}

}  // namespace dlas

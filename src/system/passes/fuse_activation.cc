#include "dlas/system/passes.h"
#include "system/passes/pass_util.h"

#include <cmath>

namespace dlas {
namespace {

// HardSigmoid(x) with HardSwish's constants: x * HardSigmoid(x) is then HardSwish(x).
bool is_hardswish_gate(const Node& n) {
  return n.op == "HardSigmoid" && std::fabs(n.attr_float("alpha", 0.2f) - 1.f / 6.f) < 1e-7f &&
         n.attr_float("beta", 0.5f) == 0.5f;
}

}  // namespace

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
    } else if (uses[y] == 2 && uses[act.outputs[0]] == 1 &&
               (act.op == "Sigmoid" || is_hardswish_gate(act))) {
      // SiLU as exported: s = Sigmoid(y); z = Mul(y, s) (either operand order). HardSwish as
      // exported below opset 14: s = HardSigmoid(y, alpha 1/6, beta 1/2); z = Mul(y, s).
      for (size_t mi = 0; mi < graph.nodes.size(); ++mi) {
        const Node& mul = graph.nodes[mi];
        if (mul.op != "Mul" || mul.inputs.size() != 2 || dead[mi]) continue;
        if ((mul.inputs[0] == y && mul.inputs[1] == act.outputs[0]) ||
            (mul.inputs[1] == y && mul.inputs[0] == act.outputs[0])) {
          name = act.op == "Sigmoid" ? "silu" : "hardswish";
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

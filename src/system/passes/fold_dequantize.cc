// DequantizeLinear of constants -> f32 initializers (dlas/system/passes.h): the quantized
// weights of float ops (a Gemm, a conv left in float) once the int8 fusion took the rest.
#include "dlas/system/passes.h"
#include "dlas/system/reference.h"
#include "system/passes/pass_util.h"

namespace dlas {

int fold_dequantize(Graph& graph) {
  const reference::KernelFn fn = reference::find_kernel("DequantizeLinear");
  std::vector<bool> dead(graph.nodes.size(), false);
  int folded = 0;
  for (size_t i = 0; i < graph.nodes.size(); ++i) {
    const Node& n = graph.nodes[i];
    if (n.op != "DequantizeLinear") continue;
    std::vector<Tensor> ins;
    for (const std::string& in : n.inputs) {
      if (in.empty()) {
        ins.emplace_back();
      } else if (const Tensor* c = graph.constant(in)) {
        ins.push_back(*c);
      } else {
        break;
      }
    }
    if (ins.size() != n.inputs.size()) continue;
    const ValueInfo& v = graph.value(n.outputs[0]);
    std::vector<Tensor> outs = {Tensor(v.dtype, v.shape)};
    fn(n, ins, outs);
    graph.initializers[n.outputs[0]] = outs[0];
    dead[i] = true;
    ++folded;
  }
  if (folded == 0) return 0;
  passes::erase_nodes(graph, dead);
  eliminate_dead_code(graph);
  graph.infer();
  return folded;
}

}  // namespace dlas

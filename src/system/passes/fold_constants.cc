#include "dlas/system/passes.h"
#include "dlas/system/reference.h"

namespace dlas {

namespace {
// Folding a node whose output is huge would bloat the model (e.g. a
// ConstantOfShape feeding an Add); keep such nodes.
constexpr int64_t kMaxFoldedElements = int64_t{1} << 24;
}  // namespace

void fold_constants(Graph& graph) {
  // Seed values with graph inputs and initializers, then walk in topological order,
  // inferring each node and folding it when all its inputs are known constants.
  graph.begin_inference();
  graph.topo_sort();
  std::vector<Node> nodes = std::move(graph.nodes);
  graph.nodes.clear();
  for (Node& n : nodes) {
    graph.nodes.push_back(std::move(n));
    const size_t idx = graph.nodes.size() - 1;
    graph.infer_node(idx);
    Node& cur = graph.nodes[idx];
    bool all_const = true;
    for (const auto& in : cur.inputs)
      if (!in.empty() && !graph.constant(in)) all_const = false;
    const bool is_shape = cur.op == "Shape" || cur.op == "Size";
    bool small = true;
    for (const auto& o : cur.outputs)
      if (!o.empty() && shape_numel(graph.value(o).shape) > kMaxFoldedElements) small = false;
    const reference::KernelFn fn = reference::find_kernel(cur.op);
    if (!fn || !small || !(all_const || is_shape) || cur.op == "Dropout") continue;
    // A quantized weight's DequantizeLinear stays: the int8 lowering (fuse_quantized_conv)
    // reads the integer weights and their scales through it.
    if (cur.op == "DequantizeLinear") continue;
    std::vector<Tensor> ins, outs;
    for (const auto& in : cur.inputs) {
      if (in.empty()) {
        ins.emplace_back();
      } else if (const Tensor* c = graph.constant(in)) {
        ins.push_back(*c);
      } else {  // Shape/Size read only the static shape: a zero tensor of that shape will do
        const ValueInfo& vi = graph.value(in);
        if (shape_numel(vi.shape) > kMaxFoldedElements) break;
        ins.emplace_back(vi.dtype, vi.shape);
      }
    }
    if (ins.size() != cur.inputs.size()) continue;
    for (const auto& o : cur.outputs) {
      if (o.empty()) {
        outs.emplace_back();
      } else {
        const ValueInfo& vi = graph.value(o);
        outs.emplace_back(vi.dtype, vi.shape);
      }
    }
    fn(cur, ins, outs);
    for (size_t i = 0; i < cur.outputs.size(); ++i)
      if (!cur.outputs[i].empty()) graph.initializers[cur.outputs[i]] = outs[i];
    graph.nodes.pop_back();
  }
  // A folded value that is a graph output stays an initializer; the graph then
  // returns it as a constant.
  eliminate_dead_code(graph);
  graph.infer();
}

}  // namespace dlas

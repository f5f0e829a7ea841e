// fuse_channel_scale_quantize (dlas/system/passes.h): QuantizeLinear(Mul(x, g)), x an f32
// [N, C, H, W] activation and g its per-channel factors [N, C, 1, 1] (a squeeze-and-
// excitation block's gate), becomes one QChannelScale(x, g, scale, zp). In EfficientNet's
// int8 graphs the gated activation is only ever quantized for the projection conv, so the
// f32 product, written by one pass and read back by another, never has to exist.
#include "dlas/system/passes.h"
#include "system/passes/pass_util.h"

namespace dlas {
namespace {

bool runtime_f32(const Graph& g, const std::string& v) {
  return !v.empty() && !g.constant(v) && g.has_value(v) && g.value(v).dtype == DType::kF32;
}

// x [N, C, H, W] and g [N, C, 1, 1], both runtime f32 values.
bool activation_and_gate(const Graph& g, const std::string& x, const std::string& gate) {
  if (!runtime_f32(g, x) || !runtime_f32(g, gate)) return false;
  const Shape& xs = g.value(x).shape;
  const Shape& gs = g.value(gate).shape;
  return xs.size() == 4 && gs.size() == 4 && gs[0] == xs[0] && gs[1] == xs[1] && gs[2] == 1 &&
         gs[3] == 1 && xs[2] * xs[3] > 1;
}

// A QuantizeLinear with a constant scalar f32 scale > 0 and a constant 8-bit scalar zero point
// (or none), and no axis other than the default.
bool per_tensor_quantize(const Graph& g, const Node& q) {
  if (q.op != "QuantizeLinear" || q.inputs.size() < 2 || q.outputs.size() != 1) return false;
  const Tensor* s = g.constant(q.inputs[1]);
  if (!s || s->dtype() != DType::kF32 || s->numel() != 1 || !(s->data<float>()[0] > 0))
    return false;
  if (q.inputs.size() > 2 && !q.inputs[2].empty()) {
    const Tensor* z = g.constant(q.inputs[2]);
    if (!z || z->numel() != 1 || (z->dtype() != DType::kU8 && z->dtype() != DType::kS8))
      return false;
  }
  return true;
}

}  // namespace

int fuse_channel_scale_quantize(Graph& graph) {
  const auto uses = passes::use_counts(graph);
  const auto prod = passes::producers(graph);
  std::vector<bool> dead(graph.nodes.size(), false);
  int fused = 0;
  for (Node& q : graph.nodes) {
    if (!per_tensor_quantize(graph, q)) continue;
    auto p = prod.find(q.inputs[0]);
    if (p == prod.end()) continue;
    const size_t mi = p->second;
    const Node& mul = graph.nodes[mi];
    if (dead[mi] || mul.op != "Mul" || mul.inputs.size() != 2 || mul.outputs.size() != 1) continue;
    auto u = uses.find(mul.outputs[0]);
    if (u == uses.end() || u->second != 1) continue;  // the product has another reader
    std::string x = mul.inputs[0], gate = mul.inputs[1];
    if (!activation_and_gate(graph, x, gate)) std::swap(x, gate);
    if (!activation_and_gate(graph, x, gate)) continue;
    std::vector<std::string> inputs{x, gate, q.inputs[1]};
    if (q.inputs.size() > 2 && !q.inputs[2].empty()) inputs.push_back(q.inputs[2]);
    q = Node{q.name, "QChannelScale", inputs, q.outputs, {}};
    dead[mi] = true;
    ++fused;
  }
  if (!fused) return 0;
  passes::erase_nodes(graph, dead);
  graph.infer();
  return fused;
}

}  // namespace dlas

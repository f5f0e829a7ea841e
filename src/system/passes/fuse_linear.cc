// Linear layers with their epilogue (dlas/system/passes.h): a MatMul of an activation
// [..., K] by constant float weights [K, N], then what an exporter writes after it -- the bias
// Add of a constant of N columns, an Add of a residual shaped like the output (f32 graphs),
// an activation (Relu, Clip, Sigmoid, HardSigmoid, HardSwish, Gelu) -- becomes one
// FusedMatMul, so the FC kernel applies them to each output tile while it is in L1 instead
// of passing over the whole output once per op. ConvNeXt's blocks write MatMul -> Add(bias)
// -> Gelu -> MatMul -> Add(bias); a transformer's MLP ends in the residual Add.
#include "dlas/system/passes.h"
#include "system/passes/pass_util.h"

namespace dlas {
namespace {

// A constant of n columns: its shape broadcasts along the last axis only ([n], [1, n], ...).
bool columns_constant(const Graph& g, const std::string& value, int64_t n, DType t) {
  const Tensor* c = g.constant(value);
  if (!c || c->dtype() != t || c->shape().empty() || c->shape().back() != n) return false;
  for (size_t i = 0; i + 1 < c->shape().size(); ++i)
    if (c->shape()[i] != 1) return false;
  return true;
}

}  // namespace

int fuse_linear(Graph& graph) {
  Graph& g = graph;
  const passes::Readers readers(g);
  auto only_reader = [&](const std::string& value) { return readers.only(value, g.nodes.size()); };
  std::vector<bool> dead(g.nodes.size(), false);
  int fused = 0;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const Node& mm = g.nodes[i];
    if (dead[i] || mm.op != "MatMul" || mm.inputs.size() != 2 || mm.outputs.size() != 1) continue;
    const Tensor* w = g.constant(mm.inputs[1]);
    if (!w || w->rank() != 2 || g.constant(mm.inputs[0]) || !g.has_value(mm.inputs[0])) continue;
    const ValueInfo& x = g.value(mm.inputs[0]);
    if (!is_float(x.dtype) || w->dtype() != x.dtype || x.shape.size() < 2 ||
        x.shape.back() != w->dim(0))
      continue;
    const int64_t n = w->dim(1);
    Node f;
    f.name = mm.name;
    f.op = "FusedMatMul";
    f.inputs = {mm.inputs[0], mm.inputs[1], "", ""};
    std::string out = mm.outputs[0];
    const Shape y_shape = g.value(out).shape;
    std::vector<size_t> absorbed;
    // The bias: Add(y, b) or Add(b, y), b a constant of n columns of y's type.
    if (size_t a = only_reader(out); a < g.nodes.size() && !dead[a]) {
      const Node& add = g.nodes[a];
      if (add.op == "Add" && add.inputs.size() == 2 && add.inputs[0] != add.inputs[1]) {
        const std::string& other = add.inputs[add.inputs[0] == out ? 1 : 0];
        if (columns_constant(g, other, n, x.dtype) && g.value(add.outputs[0]).shape == y_shape) {
          f.inputs[2] = other;
          absorbed.push_back(a);
          out = add.outputs[0];
        }
      }
    }
    // A residual (f32: the 16-bit FC kernels round their outputs without one).
    if (size_t a = only_reader(out); x.dtype == DType::kF32 && a < g.nodes.size() && !dead[a]) {
      const Node& add = g.nodes[a];
      if (add.op == "Add" && add.inputs.size() == 2 && add.inputs[0] != add.inputs[1]) {
        const std::string& other = add.inputs[add.inputs[0] == out ? 1 : 0];
        if (!g.constant(other) && g.has_value(other) && g.value(other).dtype == x.dtype &&
            g.value(other).shape == y_shape && g.value(add.outputs[0]).shape == y_shape) {
          f.inputs[3] = other;
          absorbed.push_back(a);
          out = add.outputs[0];
        }
      }
    }
    if (size_t a = only_reader(out); a < g.nodes.size() && !dead[a]) {
      std::string name;
      std::vector<float> params;
      if (passes::linear_activation_of(g, g.nodes[a], name, params)) {
        f.attrs["activation"] = name;
        if (!params.empty()) f.attrs["activation_params"] = params;
        absorbed.push_back(a);
        out = g.nodes[a].outputs[0];
      }
    }
    if (absorbed.empty()) continue;
    while (!f.inputs.empty() && f.inputs.back().empty()) f.inputs.pop_back();
    f.outputs = {out};
    // In the place of the last node it absorbs (a residual computed after the MatMul too).
    absorbed.push_back(i);
    passes::place_fused(g, dead, absorbed, std::move(f));
    ++fused;
  }
  if (!fused) return 0;
  passes::erase_nodes(g, dead);
  g.infer();
  return fused;
}

}  // namespace dlas

// Per-column scales folded into the Linear layer before them (dlas/system/passes.h): a Mul by
// a constant vector after a FusedMatMul, a MatMul by constant weights or a QFc without an
// activation or residual -- directly on its [..., N] output (a constant of N columns), or
// after a Transpose to channels-first (perm 0,3,1,2, a constant [N,1,1] or [1,N,1,1]) --
// multiplies the layer's weight columns and bias instead (a QFc's per-column weight scales
// and bias). ConvNeXt's layer scale, `gamma * block(x)`, is such a Mul after each block's
// last Linear layer; folded, nothing stands between that layer's transpose and the
// residual Add.
#include "dlas/system/passes.h"
#include "system/passes/pass_util.h"

namespace dlas {
namespace {

// The n values of constant `value` when its shape puts them on axis `axis` of a rank-`rank`
// tensor (every other extent 1; leading axes may be missing), as f32.
bool scale_along(const Graph& g, const std::string& value, int64_t n, int64_t axis, size_t rank,
                 std::vector<float>& out) {
  const Tensor* t = g.constant(value);
  if (!t || !is_float(t->dtype()) || t->numel() != n || t->rank() > rank) return false;
  const Shape& s = t->shape();
  const int64_t lead = static_cast<int64_t>(rank - s.size());  // missing leading axes
  for (size_t i = 0; i < s.size(); ++i)
    if (static_cast<int64_t>(i) + lead != axis && s[i] != 1) return false;
  if (n > 1 && (axis < lead || s[static_cast<size_t>(axis - lead)] != n)) return false;
  const Tensor f = t->cast(DType::kF32);
  out.assign(f.data<float>(), f.data<float>() + n);
  return true;
}

// A copy of constant `name` with column j of its last axis multiplied by s[j] (computed in
// f32), as a new initializer of the same type; returns its name.
std::string scaled_copy(Graph& g, const std::string& name, const std::vector<float>& s) {
  const Tensor* t = g.constant(name);
  Tensor f = t->cast(DType::kF32);
  const int64_t n = static_cast<int64_t>(s.size());
  float* d = f.data<float>();
  for (int64_t i = 0; i < f.numel(); ++i) d[i] *= s[static_cast<size_t>(i % n)];
  const std::string out = g.unique_value_name(name + ".scaled");
  g.initializers[out] = f.cast(t->dtype());
  g.set_value({out, t->dtype(), t->shape()});
  return out;
}

}  // namespace

int fold_linear_scale(Graph& graph) {
  Graph& g = graph;
  const passes::Readers readers(g);
  auto only_reader = [&](const std::string& value) { return readers.only(value, g.nodes.size()); };
  std::vector<bool> dead(g.nodes.size(), false);
  int folded = 0;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    Node& fc = g.nodes[i];
    const bool qfc = fc.op == "QFc";
    if (fc.op != "FusedMatMul" && fc.op != "MatMul" && !qfc) continue;
    if (fc.outputs.size() != 1 || fc.inputs.size() < 2 || !g.constant(fc.inputs[1]) ||
        fc.attr_string("activation", "none") != "none" ||
        (fc.inputs.size() > 3 && !fc.inputs[3].empty()))
      continue;
    const Shape& y = g.value(fc.outputs[0]).shape;
    const Tensor* w = g.constant(fc.inputs[1]);
    const bool has_bias = fc.inputs.size() > 2 && !fc.inputs[2].empty();
    if (y.empty() || w->rank() != 2 || (has_bias && !g.constant(fc.inputs[2]))) continue;
    const int64_t n = y.back();
    // The Mul, directly or behind a channels-first Transpose of a 4-D output.
    size_t t = g.nodes.size(), m = only_reader(fc.outputs[0]);
    if (m < g.nodes.size() && g.nodes[m].op == "Transpose" && y.size() == 4 &&
        g.nodes[m].attr_ints("perm", {}) == std::vector<int64_t>{0, 3, 1, 2}) {
      t = m;
      m = only_reader(g.nodes[t].outputs[0]);
    }
    if (m >= g.nodes.size() || dead[m] || g.nodes[m].op != "Mul" || g.nodes[m].inputs.size() != 2)
      continue;
    const Node& mul = g.nodes[m];
    const std::string& in = t < g.nodes.size() ? g.nodes[t].outputs[0] : fc.outputs[0];
    const std::string& other = mul.inputs[mul.inputs[0] == in ? 1 : 0];
    std::vector<float> s;
    const size_t rank = t < g.nodes.size() ? 4 : y.size();
    const int64_t axis = t < g.nodes.size() ? 1 : static_cast<int64_t>(y.size()) - 1;
    if (other == in || !scale_along(g, other, n, axis, rank, s) ||
        g.value(mul.outputs[0]).shape != g.value(in).shape)
      continue;
    if (qfc) {
      // The per-column weight scales (whatever the weight layout), which must stay > 0.
      std::vector<float> ws = fc.attr_floats("w_scale", {});
      if (ws.size() == 1) ws.assign(static_cast<size_t>(n), ws[0]);
      bool positive = static_cast<int64_t>(ws.size()) == n;
      for (float v : s) positive &= v > 0.f;
      if (!positive) continue;
      for (int64_t j = 0; j < n; ++j) ws[static_cast<size_t>(j)] *= s[static_cast<size_t>(j)];
      fc.attrs["w_scale"] = ws;
    } else {
      if (w->dim(1) != n) continue;
      fc.inputs[1] = scaled_copy(g, fc.inputs[1], s);
    }
    if (has_bias) fc.inputs[2] = scaled_copy(g, fc.inputs[2], s);
    // The Mul's output is now the layer's (or the Transpose's) output.
    const std::string out = mul.outputs[0];
    if (t < g.nodes.size())
      g.nodes[t].outputs[0] = out;
    else
      fc.outputs[0] = out;
    dead[m] = true;
    ++folded;
  }
  if (!folded) return 0;
  passes::erase_nodes(g, dead);
  eliminate_dead_code(g);
  g.infer();
  return folded;
}

}  // namespace dlas

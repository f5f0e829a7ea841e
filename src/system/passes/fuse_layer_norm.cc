// A LayerNorm as exporters decompose it below opset 17 (dlas/system/passes.h):
//   m = ReduceMean(x, last axis); d = Sub(x, m); v = ReduceMean(Pow(d, 2));
//   y = Div(d, Sqrt(Add(v, eps))) [* gamma] [+ beta]
// with gamma and beta constant vectors of the last axis, every intermediate read only in the
// pattern, becomes one ONNX LayerNormalization (axis -1): one kernel over each row instead
// of nine passes over the tensor (ConvNeXt's blocks each begin with one).
#include <cmath>

#include "dlas/system/passes.h"
#include "system/passes/pass_util.h"

namespace dlas {
namespace {

// Whether ReduceMean node n averages only the last axis of its input, keeping it.
bool mean_of_last_axis(const Graph& g, const Node& n) {
  if (n.op != "ReduceMean" || n.inputs.empty() || n.outputs.size() != 1 ||
      !g.has_value(n.inputs[0]) || n.attr_int("keepdims", 1) != 1)
    return false;
  const int64_t r = static_cast<int64_t>(g.value(n.inputs[0]).shape.size());
  std::vector<int64_t> axes = n.attr_ints("axes", {});
  if (n.inputs.size() > 1 && !n.inputs[1].empty()) {
    const Tensor* t = g.constant(n.inputs[1]);
    if (!t) return false;
    axes = t->to_int64_vector();
  }
  return r >= 1 && axes.size() == 1 && (axes[0] == -1 || axes[0] == r - 1);
}

}  // namespace

int fuse_layer_norm(Graph& graph) {
  Graph& g = graph;
  const passes::Readers readers(g);
  auto reads = [&](const std::string& value) { return readers.count(value); };
  // The one node reading `value` (read once, by that node only), with op `op`; else npos.
  auto only = [&](const std::string& value, const char* op) -> size_t {
    const size_t k = readers.only(value, g.nodes.size());
    return k < g.nodes.size() && g.nodes[k].op == op ? k : g.nodes.size();
  };
  // The other operand of binary node n, whose one operand is `value`.
  auto other = [](const Node& n, const std::string& value) -> const std::string& {
    return n.inputs[n.inputs[0] == value ? 1 : 0];
  };
  const size_t none = g.nodes.size();
  std::vector<bool> dead(g.nodes.size(), false);
  int fused = 0;
  for (size_t mi = 0; mi < g.nodes.size(); ++mi) {
    const Node& mean = g.nodes[mi];
    if (dead[mi] || !mean_of_last_axis(g, mean)) continue;
    const std::string& x = mean.inputs[0];
    if (g.constant(x) || !is_float(g.value(x).dtype)) continue;
    const DType t = g.value(x).dtype;
    const int64_t c = g.value(x).shape.back();
    // d = Sub(x, m), read by the square and the Div only.
    const size_t si = only(mean.outputs[0], "Sub");
    if (si == none || g.nodes[si].inputs.size() != 2 || g.nodes[si].inputs[0] != x) continue;
    const std::string& d = g.nodes[si].outputs[0];
    const auto dr = readers.nodes.find(d);
    if (reads(d) != 2 || dr == readers.nodes.end() || dr->second.size() != 2) continue;
    const std::vector<size_t>& d_readers = dr->second;
    size_t qi = none, di = none;
    for (size_t k : d_readers) {
      const Node& n = g.nodes[k];
      float e = 0;
      if (n.op == "Div" && n.inputs.size() == 2 && n.inputs[0] == d)
        di = k;
      else if (n.op == "Pow" && n.inputs.size() == 2 && n.inputs[0] == d &&
               passes::scalar_input(g, n, 1, 0.f, e) && g.constant(n.inputs[1]) && e == 2.f)
        qi = k;
    }
    if (qi == none || di == none || qi == di) continue;
    const size_t vi = only(g.nodes[qi].outputs[0], "ReduceMean");
    if (vi == none || !mean_of_last_axis(g, g.nodes[vi])) continue;
    const size_t ai = only(g.nodes[vi].outputs[0], "Add");
    if (ai == none || g.nodes[ai].inputs.size() != 2) continue;
    const Node& add = g.nodes[ai];
    const size_t eps_at = add.inputs[0] == g.nodes[vi].outputs[0] ? 1 : 0;
    float eps = 0;
    if (!g.constant(add.inputs[eps_at]) || !passes::scalar_input(g, add, eps_at, 0.f, eps) ||
        !(eps >= 0))
      continue;
    const size_t ri = only(add.outputs[0], "Sqrt");
    if (ri == none || g.nodes[di].inputs[1] != g.nodes[ri].outputs[0]) continue;
    if (reads(g.nodes[ri].outputs[0]) != 1) continue;
    std::vector<size_t> absorbed = {mi, si, qi, vi, ai, ri, di};
    std::string out = g.nodes[di].outputs[0];
    // The affine: Mul by gamma, then Add of beta, constants of the last axis in x's type.
    auto columns = [&](const std::string& v) {
      const Tensor* k = g.constant(v);
      return k && k->dtype() == t && k->shape() == Shape{c};
    };
    std::string gamma, beta;
    if (size_t k = only(out, "Mul");
        k != none && g.nodes[k].inputs.size() == 2 && columns(other(g.nodes[k], out))) {
      gamma = other(g.nodes[k], out);
      absorbed.push_back(k);
      out = g.nodes[k].outputs[0];
    }
    if (size_t k = only(out, "Add");
        k != none && g.nodes[k].inputs.size() == 2 && columns(other(g.nodes[k], out))) {
      beta = other(g.nodes[k], out);
      absorbed.push_back(k);
      out = g.nodes[k].outputs[0];
    }
    if (gamma.empty()) {  // LayerNormalization needs a Scale: ones
      gamma = g.unique_value_name(mean.name + ".ln_scale");
      Tensor ones = Tensor(DType::kF32, {c});
      for (int64_t j = 0; j < c; ++j) ones.data<float>()[j] = 1.f;
      g.initializers[gamma] = ones.cast(t);
      g.set_value({gamma, t, {c}});
    }
    Node ln;
    ln.name = mean.name;
    ln.op = "LayerNormalization";
    ln.inputs = {x, gamma};
    if (!beta.empty()) ln.inputs.push_back(beta);
    ln.outputs = {out};
    ln.attrs["axis"] = int64_t{-1};
    ln.attrs["epsilon"] = eps;
    passes::place_fused(g, dead, absorbed, std::move(ln));
    ++fused;
  }
  if (!fused) return 0;
  passes::erase_nodes(g, dead);
  g.infer();
  return fused;
}

}  // namespace dlas

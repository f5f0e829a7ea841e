// QDQ Linear layers -> QFc (dlas/system/passes.h): a MatMul or Gemm reading a per-tensor
// DequantizeLinear'd 8-bit activation and constant s8 weights, symmetric per output column,
// with its bias (Gemm's C, or the constant Add an exporter writes after a MatMul) and a
// Relu / Clip / Gelu after it, becomes one QFc: the int8 Linear layer with an f32 output.
#include <cmath>
#include <limits>

#include "dlas/system/passes.h"
#include "system/passes/pass_util.h"
#include "system/passes/quant_pattern.h"

namespace dlas {
namespace {

// The longest reduction whose int32 sums cannot overflow: 255 * 127 per product.
constexpr int64_t kMaxReduction = 2147483647 / (255 * 127);

// A bias of n columns as f32: a constant f32 tensor of n elements whose shape broadcasts along
// the last axis only ([n], [1, n], [1, 1, n]), or a DequantizeLinear of such a constant of
// integers (a Gemm bias as dlas quantize writes it: s32 at x_scale * w_scale).
bool f32_bias(const Graph& g, const std::unordered_map<std::string, size_t>& prod,
              const std::string& value, int64_t n, std::vector<float>& out) {
  auto columns_only = [&](const Shape& s) {
    if (s.empty() || s.back() != n) return false;
    for (size_t i = 0; i + 1 < s.size(); ++i)
      if (s[i] != 1) return false;
    return true;
  };
  out.assign(static_cast<size_t>(n), 0.f);
  if (const Tensor* c = g.constant(value)) {
    if (c->dtype() != DType::kF32 || !columns_only(c->shape())) return false;
    for (int64_t i = 0; i < n; ++i) out[i] = c->data<float>()[i];
    return true;
  }
  auto it = prod.find(value);
  if (it == prod.end()) return false;
  const Node& dq = g.nodes[it->second];
  if (dq.op != "DequantizeLinear") return false;
  const Tensor* q = g.constant(dq.inputs[0]);
  const Tensor* s = g.constant(dq.inputs[1]);
  const Tensor* z =
      dq.inputs.size() > 2 && !dq.inputs[2].empty() ? g.constant(dq.inputs[2]) : nullptr;
  if (!q || !s || !columns_only(q->shape()) || (s->numel() != 1 && s->numel() != n) ||
      (dq.inputs.size() > 2 && !dq.inputs[2].empty() && !z) || (z && z->numel() != s->numel()))
    return false;
  for (int64_t i = 0; i < n; ++i) {
    const int64_t zp = z ? z->get_as_int64(z->numel() == 1 ? 0 : i) : 0;
    const double v =
        static_cast<double>(q->get_as_int64(i) - zp) * s->get_as_double(s->numel() == 1 ? 0 : i);
    out[i] = static_cast<float>(v);
  }
  return true;
}

}  // namespace

int fuse_quantized_fc(Graph& graph) {
  Graph& g = graph;
  const auto uses = passes::use_counts(g);
  const auto prod = passes::producers(g);
  std::unordered_map<std::string, std::vector<size_t>> consumers;
  for (size_t i = 0; i < g.nodes.size(); ++i)
    for (const std::string& in : g.nodes[i].inputs)
      if (!in.empty()) consumers[in].push_back(i);
  // The one node reading `value`, when nothing else (no graph output) reads it.
  auto only_reader = [&](const std::string& value) -> const Node* {
    auto u = uses.find(value);
    auto c = consumers.find(value);
    if (u == uses.end() || u->second != 1 || c == consumers.end() || c->second.size() != 1)
      return nullptr;
    return &g.nodes[c->second[0]];
  };
  std::vector<bool> dead(g.nodes.size(), false);
  std::vector<std::pair<size_t, Node>> replace;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const Node& fc = g.nodes[i];
    if ((fc.op != "MatMul" && fc.op != "Gemm") || fc.inputs.size() < 2 || fc.outputs.size() != 1)
      continue;
    bool trans_b = false;
    if (fc.op == "Gemm") {
      if (fc.attr_int("transA", 0) != 0 || fc.attr_float("alpha", 1.f) != 1.f) continue;
      trans_b = fc.attr_int("transB", 0) != 0;
    }
    const auto x = passes::dq_activation(g, prod, fc.inputs[0]);
    std::string wq;
    std::vector<float> ws;
    if (!x || !passes::dq_weights(g, prod, fc.inputs[1], 2, trans_b ? 0 : 1, wq, ws)) continue;
    const Shape& xs = g.value(fc.inputs[0]).shape;
    const Shape& w = g.constant(wq)->shape();
    const int64_t k = trans_b ? w[1] : w[0], n = static_cast<int64_t>(ws.size());
    if (xs.empty() || xs.back() != k || k > kMaxReduction || (fc.op == "Gemm" && xs.size() != 2))
      continue;
    std::vector<float> bias;
    if (fc.op == "Gemm" && fc.inputs.size() > 2 && !fc.inputs[2].empty() &&
        (fc.attr_float("beta", 1.f) != 1.f || !f32_bias(g, prod, fc.inputs[2], n, bias)))
      continue;
    std::string out = fc.outputs[0];
    std::vector<size_t> absorbed;
    // The exporter's bias: Add(y, b) or Add(b, y) with a constant b of n columns.
    if (bias.empty())
      if (const Node* add = only_reader(out); add && add->op == "Add" && add->inputs.size() == 2) {
        const std::string& other = add->inputs[add->inputs[0] == out ? 1 : 0];
        std::vector<float> b;
        if (other != out && f32_bias(g, prod, other, n, b) &&
            g.value(add->outputs[0]).shape == g.value(out).shape) {
          bias = std::move(b);
          absorbed.push_back(static_cast<size_t>(add - g.nodes.data()));
          out = add->outputs[0];
        }
      }
    Node q;
    q.name = fc.name;
    q.op = "QFc";
    if (const Node* act = only_reader(out)) {
      std::string name;
      std::vector<float> params;
      if (passes::linear_activation_of(g, *act, name, params) &&
          (name == "relu" || name == "clip" || name == "gelu")) {
        q.attrs["activation"] = name;
        if (!params.empty()) q.attrs["activation_params"] = params;
        absorbed.push_back(static_cast<size_t>(act - g.nodes.data()));
        out = act->outputs[0];
      }
    }
    q.inputs = {x->q, wq};
    if (!bias.empty()) {
      const std::string b = g.unique_value_name(fc.name + ".bias_f32");
      Tensor t(DType::kF32, {n});
      std::copy(bias.begin(), bias.end(), t.data<float>());
      g.initializers[b] = std::move(t);
      g.set_value({b, DType::kF32, {n}});
      q.inputs.push_back(b);
    }
    q.outputs = {out};
    q.attrs["trans_b"] = static_cast<int64_t>(trans_b);
    q.attrs["x_scale"] = x->p.scale;
    q.attrs["x_zero_point"] = static_cast<int64_t>(x->p.zero_point);
    q.attrs["w_scale"] = ws;
    for (size_t a : absorbed) dead[a] = true;
    replace.emplace_back(i, std::move(q));
  }
  if (replace.empty()) return 0;
  for (auto& [i, n] : replace) g.nodes[i] = std::move(n);
  passes::erase_nodes(g, dead);
  eliminate_dead_code(g);
  g.infer();
  return static_cast<int>(replace.size());
}

}  // namespace dlas

// fuse_channel_affine: a BatchNormalization that fold_batchnorm left (its input is not a conv
// output: DenseNet's pre-activation norm1 and its transitions' norms) becomes one
// ChannelAffine(x0, ..., xn-1, scale, shift), taking in the channel Concat that feeds it and
// the activation that follows it when nothing else reads their values. Three passes over the
// activations (copy, affine, activation) become one. In an fp16 or bf16 graph the values
// keep their type (scale and shift are f32, computed from the widened statistics): a plan
// without a native 16-bit step runs the one op on widened copies, instead of three.
#include <cmath>

#include "dlas/system/passes.h"
#include "system/passes/pass_util.h"

namespace dlas {
namespace {

// A non-constant activation of rank >= 2 of type t (f32, f16 or bf16).
bool is_activation_of(const Graph& g, const std::string& v, DType t) {
  return is_float(t) && !v.empty() && !g.constant(v) && g.has_value(v) && g.value(v).dtype == t &&
         g.value(v).shape.size() >= 2;
}

// BatchNormalization(x, scale, B, mean, var) with constant float statistics: its
// per-channel multiplier and addend, as the reference kernel computes them (16-bit
// statistics widened exactly).
bool batchnorm_affine(const Graph& g, const Node& bn, std::vector<float>& mul,
                      std::vector<float>& add) {
  if (bn.op != "BatchNormalization" || bn.inputs.size() != 5 || bn.outputs.size() != 1 ||
      bn.attr_int("training_mode", 0) != 0 || bn.inputs[0].empty() || !g.has_value(bn.inputs[0]) ||
      !is_activation_of(g, bn.inputs[0], g.value(bn.inputs[0]).dtype) ||
      !g.has_value(bn.outputs[0]) || g.value(bn.outputs[0]).dtype != g.value(bn.inputs[0]).dtype)
    return false;
  Tensor widened[4];
  const Tensor* t[4];
  for (int i = 0; i < 4; ++i) {
    t[i] = g.constant(bn.inputs[static_cast<size_t>(1 + i)]);
    if (!t[i] || !is_float(t[i]->dtype())) return false;
    if (t[i]->dtype() != DType::kF32) {
      widened[i] = t[i]->cast(DType::kF32);
      t[i] = &widened[i];
    }
  }
  const int64_t c = g.value(bn.inputs[0]).shape[1];
  const double eps = bn.attr_float("epsilon", 1e-5f);
  mul.resize(static_cast<size_t>(c));
  add.resize(mul.size());
  for (int64_t k = 0; k < c; ++k) {
    const double a = t[0]->data<float>()[k] / std::sqrt(double(t[3]->data<float>()[k]) + eps);
    mul[static_cast<size_t>(k)] = static_cast<float>(a);
    add[static_cast<size_t>(k)] =
        static_cast<float>(t[1]->data<float>()[k] - t[2]->data<float>()[k] * a);
  }
  return true;
}

// A Concat along axis 1 of same-rank activations of type t.
bool is_channel_concat(const Graph& g, const Node& n, DType t) {
  if (n.op != "Concat" || n.outputs.size() != 1 || n.inputs.empty()) return false;
  const int64_t rank = static_cast<int64_t>(g.value(n.outputs[0]).shape.size());
  int64_t axis = n.attr_int("axis", 0);
  if (axis < 0) axis += rank;
  if (axis != 1) return false;
  for (const std::string& in : n.inputs)
    if (!is_activation_of(g, in, t) || static_cast<int64_t>(g.value(in).shape.size()) != rank)
      return false;
  return true;
}

}  // namespace

int fuse_channel_affine(Graph& graph) {
  auto uses = passes::use_counts(graph);
  auto prod = passes::producers(graph);
  // The single consumer of each value read once.
  std::unordered_map<std::string, size_t> reader;
  for (size_t i = 0; i < graph.nodes.size(); ++i)
    for (const std::string& in : graph.nodes[i].inputs)
      if (!in.empty()) reader[in] = i;
  std::vector<bool> dead(graph.nodes.size(), false);
  int fused = 0;
  for (size_t bi = 0; bi < graph.nodes.size(); ++bi) {
    std::vector<float> mul, add;
    if (dead[bi] || !batchnorm_affine(graph, graph.nodes[bi], mul, add)) continue;
    const Node bn = graph.nodes[bi];
    std::vector<std::string> xs{bn.inputs[0]};
    size_t concat = graph.nodes.size(), act = graph.nodes.size();
    auto p = prod.find(bn.inputs[0]);
    if (p != prod.end() && !dead[p->second] && uses[bn.inputs[0]] == 1 &&
        is_channel_concat(graph, graph.nodes[p->second], graph.value(bn.inputs[0]).dtype)) {
      concat = p->second;
      xs = graph.nodes[concat].inputs;
    }
    std::string name = "none";
    std::vector<float> params;
    std::string y = bn.outputs[0];
    auto r = reader.find(y);
    if (uses[y] == 1 && r != reader.end() && !dead[r->second] &&
        passes::activation_of(graph, graph.nodes[r->second], name, params) &&
        graph.nodes[r->second].outputs.size() == 1) {
      act = r->second;
      y = graph.nodes[act].outputs[0];
    } else {
      name = "none";
      params.clear();
    }
    // A lone BatchNormalization stays (it lowers to the same step).
    if (concat == graph.nodes.size() && act == graph.nodes.size()) continue;
    const int64_t c = static_cast<int64_t>(mul.size());
    Tensor scale(DType::kF32, {c}), shift(DType::kF32, {c});
    std::copy(mul.begin(), mul.end(), scale.data<float>());
    std::copy(add.begin(), add.end(), shift.data<float>());
    const std::string sn = graph.unique_value_name(bn.name + ".affine_scale");
    graph.initializers[sn] = std::move(scale);
    const std::string tn = graph.unique_value_name(bn.name + ".affine_shift");
    graph.initializers[tn] = std::move(shift);
    Node& n = graph.nodes[bi];
    n.op = "ChannelAffine";
    n.inputs = xs;
    n.inputs.push_back(sn);
    n.inputs.push_back(tn);
    n.outputs = {y};
    n.attrs.clear();
    n.attrs["activation"] = name;
    if (!params.empty()) n.attrs["activation_params"] = params;
    if (concat < dead.size()) dead[concat] = true;
    if (act < dead.size()) dead[act] = true;
    ++fused;
  }
  passes::erase_nodes(graph, dead);
  eliminate_dead_code(graph);  // drops the BatchNorm statistics
  graph.infer();
  return fused;
}

}  // namespace dlas

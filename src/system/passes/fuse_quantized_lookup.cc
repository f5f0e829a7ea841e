// DQ -> pointwise float ops [-> Q] chains -> QLookup (dlas/system/passes.h): a function of
// one 8-bit value has at most 256 inputs, so it is a table -- of bytes when the chain ends in
// a QuantizeLinear, of floats otherwise.
// The SiLU between EfficientNet's int8 convs (DequantizeLinear, Sigmoid, Mul, QuantizeLinear,
// four full-size passes over the activations, two of them in f32) becomes one byte lookup.
// The table is the chain itself run by the reference kernels on the 256 possible inputs, so
// the rewrite computes exactly what the reference runtime computes for the chain.
#include <optional>
#include <set>
#include <unordered_map>

#include "dlas/system/passes.h"
#include "dlas/system/reference.h"
#include "system/passes/pass_util.h"

namespace dlas {
namespace {

bool is_8bit(DType t) { return t == DType::kU8 || t == DType::kS8; }

// Elementwise float ops whose output at i depends only on their inputs at i (inputs of the
// same shape or constant scalars), with reference kernels.
const std::set<std::string>& pointwise_ops() {
  static const std::set<std::string> ops = {
      "Sigmoid", "Relu", "Clip", "Tanh", "HardSigmoid", "HardSwish", "LeakyRelu", "Elu",
      "Selu",    "Exp",  "Neg",  "Abs",  "Sqrt",        "Erf",       "Mul",       "Add",
      "Sub",     "Div",  "Min",  "Max",  "Softplus",    "Mish",      "Gelu",      "Identity"};
  return ops;
}

bool scalar_constant(const Graph& g, const std::string& v) {
  const Tensor* t = g.constant(v);
  return t && t->numel() == 1 && t->dtype() == DType::kF32;
}

// Per-tensor 8-bit Q / DQ node with constant parameters (scale > 0).
bool per_tensor_qdq(const Graph& g, const Node& n) {
  if (n.inputs.size() < 2 || !scalar_constant(g, n.inputs[1])) return false;
  if (n.inputs.size() > 2 && !n.inputs[2].empty()) {
    const Tensor* z = g.constant(n.inputs[2]);
    if (!z || z->numel() != 1 || !is_8bit(z->dtype())) return false;
  }
  return g.constant(n.inputs[1])->data<float>()[0] > 0;
}

struct Chain {
  size_t dq = 0;             // the DequantizeLinear
  std::vector<size_t> body;  // the float ops, in graph order
};

// The chain computing `end` (an f32 value), when its cone reaches exactly one per-tensor
// DequantizeLinear of a runtime 8-bit value through pointwise ops whose results nothing
// outside the cone reads -- `end` included when `reader` (the QuantizeLinear of the chain) is
// given, `end` excluded (any reader) otherwise.
std::optional<Chain> chain_of(const Graph& g, const std::string& end, std::optional<size_t> reader,
                              const std::unordered_map<std::string, size_t>& prod,
                              const std::unordered_map<std::string, std::vector<size_t>>& users) {
  const Shape& shape = g.value(end).shape;
  std::set<size_t> cone;
  std::optional<size_t> dq;
  std::vector<std::string> stack{end};
  while (!stack.empty()) {
    const std::string v = stack.back();
    stack.pop_back();
    auto it = prod.find(v);
    if (it == prod.end()) return std::nullopt;  // a graph input or a non-scalar constant
    const size_t pi = it->second;
    const Node& n = g.nodes[pi];
    if (n.op == "DequantizeLinear") {
      if (g.constant(n.inputs[0]) || !is_8bit(g.value(n.inputs[0]).dtype) ||
          !per_tensor_qdq(g, n) || (dq && *dq != pi))
        return std::nullopt;
      dq = pi;
      continue;
    }
    if (!pointwise_ops().count(n.op) || !reference::find_kernel(n.op) || n.outputs.size() != 1)
      return std::nullopt;
    if (g.value(n.outputs[0]).dtype != DType::kF32 || g.value(n.outputs[0]).shape != shape)
      return std::nullopt;
    if (!cone.insert(pi).second) continue;
    for (size_t i = 0; i < n.inputs.size(); ++i) {
      const std::string& in = n.inputs[i];
      if (in.empty() || (i > 0 && scalar_constant(g, in))) continue;
      if (g.constant(in)) return std::nullopt;
      stack.push_back(in);
    }
  }
  if (!dq || cone.empty()) return std::nullopt;
  // Every value made inside the cone is read only inside it (or by the Q).
  for (size_t ni : cone) {
    const std::string& v = g.nodes[ni].outputs[0];
    if (v == end && !reader) continue;
    auto it = users.find(v);
    if (it == users.end()) return std::nullopt;
    for (size_t u : it->second)
      if (u != reader && !cone.count(u)) return std::nullopt;
    for (const std::string& o : g.outputs)
      if (o == v) return std::nullopt;
  }
  Chain c;
  c.dq = *dq;
  c.body.assign(cone.begin(), cone.end());  // node indices follow the topological order
  return c;
}

// The chain's results for the 256 values of its 8-bit input, by the reference kernels.
// `q` null: the f32 results of the chain's last op.
Tensor lookup_table(const Graph& g, const Chain& c, const Node* q, DType out_type) {
  const Node& dq = g.nodes[c.dq];
  const DType in_type = g.value(dq.inputs[0]).dtype;
  Tensor x(in_type, {256});
  for (int i = 0; i < 256; ++i) static_cast<uint8_t*>(x.raw())[i] = static_cast<uint8_t>(i);
  std::unordered_map<std::string, Tensor> env;
  env[dq.inputs[0]] = x;
  auto run = [&](const Node& n, DType type) {
    std::vector<Tensor> ins;
    for (const std::string& in : n.inputs) {
      if (in.empty()) {
        ins.emplace_back();
      } else if (const Tensor* k = g.constant(in)) {
        ins.push_back(*k);
      } else {
        ins.push_back(env.at(in));
      }
    }
    std::vector<Tensor> outs{Tensor(type, {256})};
    const reference::KernelFn fn = reference::find_kernel(n.op);
    DLAS_CHECK(fn, ErrorKind::kInternal, "fuse_quantized_lookup: no reference kernel for ", n.op);
    fn(n, ins, outs);
    env[n.outputs[0]] = outs[0];
  };
  run(dq, DType::kF32);
  for (size_t i : c.body) run(g.nodes[i], DType::kF32);
  if (!q) return env.at(g.nodes[c.body.back()].outputs[0]);
  run(*q, out_type);
  return env.at(q->outputs[0]);
}

}  // namespace

int fuse_quantized_lookup(Graph& g) {
  g.infer();
  const auto prod = passes::producers(g);
  std::unordered_map<std::string, std::vector<size_t>> users;
  for (size_t i = 0; i < g.nodes.size(); ++i)
    for (const std::string& in : g.nodes[i].inputs)
      if (!in.empty()) users[in].push_back(i);
  std::vector<bool> dead(g.nodes.size(), false);
  int fused = 0;
  // Node `at` becomes QLookup(x, table) writing `out`, the chain's ops dead.
  auto rewrite = [&](size_t at, const Chain& chain, const Node* q, DType out_type) {
    for (size_t i : chain.body)
      if (dead[i]) return;  // a node of this chain already went into another
    const std::string name = g.nodes[at].name + "_lookup";
    const std::string table_name = name + "_table";
    if (g.initializers.count(table_name) || g.values().count(table_name)) return;
    g.initializers[table_name] = lookup_table(g, chain, q, out_type);
    Node n;
    n.name = name;
    n.op = "QLookup";
    n.inputs = {g.nodes[chain.dq].inputs[0], table_name};
    n.outputs = {g.nodes[at].outputs[0]};
    for (size_t i : chain.body) dead[i] = true;
    dead[at] = false;
    g.nodes[at] = std::move(n);
    ++fused;
  };
  // Chains ending in a QuantizeLinear: byte tables.
  for (size_t qi = 0; qi < g.nodes.size(); ++qi) {
    const Node& q = g.nodes[qi];
    if (q.op != "QuantizeLinear" || !per_tensor_qdq(g, q)) continue;
    const DType out_type = g.value(q.outputs[0]).dtype;
    if (!is_8bit(out_type)) continue;
    if (const auto chain = chain_of(g, q.inputs[0], qi, prod, users))
      rewrite(qi, *chain, &q, out_type);
  }
  // Other chains (their result read by non-pointwise ops, e.g. the SiLU an SE block pools):
  // float tables, the longest chain first (reverse graph order).
  for (size_t i = g.nodes.size(); i-- > 0;) {
    const Node& n = g.nodes[i];
    if (dead[i] || !pointwise_ops().count(n.op) || n.outputs.size() != 1 ||
        g.value(n.outputs[0]).dtype != DType::kF32)
      continue;
    if (const auto chain = chain_of(g, n.outputs[0], std::nullopt, prod, users))
      rewrite(i, *chain, nullptr, DType::kF32);
  }
  if (fused == 0) return 0;
  passes::erase_nodes(g, dead);
  eliminate_dead_code(g);  // the DequantizeLinear nodes nothing reads any more
  g.infer();
  return fused;
}

}  // namespace dlas

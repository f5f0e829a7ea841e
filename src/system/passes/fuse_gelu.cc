// A GELU as exporters decompose it -- Mul(Mul(x, Add(Erf(Div(x, sqrt 2)), 1)), 0.5), PyTorch's
// export before opset 20, either operand order of the Add and Muls -- becomes one ONNX Gelu
// node: one pass over the tensor instead of five (ConvNeXt's GELUs follow its widest Linear
// layers). The fast kernel computes GELU through erfc's Abramowitz & Stegun form, within
// 1.5e-7 |x| of the decomposed graph's fast steps (whose Erf is itself that close to erf); a
// 16-bit model is rounded once instead of after every step.
#include <cmath>

#include "dlas/core/dtype.h"
#include "dlas/system/passes.h"
#include "system/passes/pass_util.h"

namespace dlas {
namespace {

// The constant scalar operand of binary node n when its other operand is `other` (either
// order), as f32; false otherwise.
bool constant_with(const Graph& g, const Node& n, const std::string& other, float& value) {
  if (n.inputs.size() != 2 || n.outputs.size() != 1) return false;
  for (size_t i : {size_t{0}, size_t{1}}) {
    if (n.inputs[1 - i] != other) continue;
    if (passes::scalar_input(g, n, i, 0.f, value) && g.constant(n.inputs[i])) return true;
  }
  return false;
}

// sqrt 2 as the exporter stored it in x's type: f32, or rounded to f16 / bf16 in a model
// converted to 16 bits.
bool is_sqrt2(float c, DType t) {
  const Tensor s = Tensor::scalar_f32(static_cast<float>(std::sqrt(2.0))).cast(t).cast(DType::kF32);
  return c == s.data<float>()[0];
}

}  // namespace

int fuse_gelu(Graph& graph) {
  auto uses = passes::use_counts(graph);
  std::unordered_map<std::string, std::vector<size_t>> consumers;
  for (size_t i = 0; i < graph.nodes.size(); ++i)
    for (const std::string& in : graph.nodes[i].inputs) consumers[in].push_back(i);
  // The one node reading `value` (itself read once), with op `op`.
  auto only_consumer = [&](const std::string& value, const char* op) -> const Node* {
    auto it = consumers.find(value);
    if (uses[value] != 1 || it == consumers.end() || it->second.size() != 1) return nullptr;
    const Node& n = graph.nodes[it->second[0]];
    return n.op == op ? &n : nullptr;
  };
  std::vector<bool> dead(graph.nodes.size(), false);
  std::unordered_map<size_t, Node> gelus;  // by the index of the node it replaces last
  int fused = 0;
  for (size_t di = 0; di < graph.nodes.size(); ++di) {
    const Node& div = graph.nodes[di];
    if (dead[di] || div.op != "Div" || div.inputs.size() != 2 || div.outputs.size() != 1) continue;
    const std::string& x = div.inputs[0];
    float c = 0;
    if (graph.constant(x) || !graph.has_value(x) || !is_float(graph.value(x).dtype) ||
        !passes::scalar_input(graph, div, 1, 0.f, c) || !graph.constant(div.inputs[1]) ||
        !is_sqrt2(c, graph.value(x).dtype))
      continue;
    const Node* erf = only_consumer(div.outputs[0], "Erf");
    if (!erf) continue;
    const Node* add = only_consumer(erf->outputs[0], "Add");
    float one = 0;
    if (!add || !constant_with(graph, *add, erf->outputs[0], one) || one != 1.f) continue;
    const Node* mul = only_consumer(add->outputs[0], "Mul");
    if (!mul || mul->inputs.size() != 2 ||
        !((mul->inputs[0] == x && mul->inputs[1] == add->outputs[0]) ||
          (mul->inputs[1] == x && mul->inputs[0] == add->outputs[0])))
      continue;
    const Node* half = only_consumer(mul->outputs[0], "Mul");
    float h = 0;
    if (!half || !constant_with(graph, *half, mul->outputs[0], h) || h != 0.5f) continue;
    // Every intermediate read once, by the next step: the five nodes become one.
    for (const Node* n : {&div, erf, add, mul, half})
      dead[static_cast<size_t>(n - graph.nodes.data())] = true;
    gelus.emplace(static_cast<size_t>(half - graph.nodes.data()),
                  Node{half->name + "/gelu", "Gelu", {x}, {half->outputs[0]}, {}});
    ++fused;
  }
  if (fused == 0) return 0;
  // Each Gelu takes its last node's place, so the order stays topological.
  std::vector<Node> out;
  for (size_t i = 0; i < graph.nodes.size(); ++i) {
    if (!dead[i])
      out.push_back(std::move(graph.nodes[i]));
    else if (auto it = gelus.find(i); it != gelus.end())
      out.push_back(std::move(it->second));
  }
  graph.nodes = std::move(out);
  eliminate_dead_code(graph);
  graph.infer();
  return fused;
}

}  // namespace dlas

#include "dlas/system/executor.h"

#include <unordered_map>

#include "dlas/system/reference.h"

namespace dlas {

std::vector<Tensor> Executor::make_outputs() const {
  const Graph& g = graph();
  std::vector<Tensor> out;
  for (const std::string& o : g.outputs) {
    const ValueInfo& v = g.value(o);
    out.emplace_back(v.dtype, v.shape);
  }
  return out;
}

std::vector<Tensor> Executor::run(const std::vector<Tensor>& inputs) {
  std::vector<Tensor> out = make_outputs();
  run_into(inputs, out);
  return out;
}

ReferenceExecutor::ReferenceExecutor(Graph graph) : graph_(std::move(graph)) {
  for (const Node& n : graph_.nodes)
    DLAS_CHECK(reference::find_kernel(n.op) != nullptr, ErrorKind::kUnsupported, n.label(),
               ": op '", n.op, "' has no reference kernel");
  for (const Node& n : graph_.nodes)
    for (const auto& o : n.outputs)
      DLAS_CHECK(o.empty() || graph_.has_value(o), ErrorKind::kInternal,
                 "ReferenceExecutor needs an inferred graph (", n.label(), ")");
}

std::vector<Tensor> ReferenceExecutor::run(const std::vector<Tensor>& inputs) const {
  const Graph& g = graph_;
  DLAS_CHECK(inputs.size() == g.inputs.size(), ErrorKind::kInvalidInput, "model expects ",
             g.inputs.size(), " input(s), got ", inputs.size());
  std::unordered_map<std::string, Tensor> env;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const ValueInfo& vi = g.inputs[i];
    const Tensor& t = inputs[i];
    DLAS_CHECK(t.defined() && t.dtype() == vi.dtype && t.shape() == vi.shape,
               ErrorKind::kInvalidInput, "input '", vi.name, "' must be ", dtype_name(vi.dtype),
               shape_str(vi.shape), ", got ", t.describe());
    env[vi.name] = t;
  }
  // Remaining uses of each intermediate, so it can be freed after its last use.
  std::unordered_map<std::string, int> uses;
  for (const Node& n : g.nodes)
    for (const auto& in : n.inputs)
      if (!in.empty()) ++uses[in];
  for (const auto& o : g.outputs) ++uses[o];

  auto lookup = [&](const std::string& name) -> Tensor {
    if (name.empty()) return Tensor();
    auto it = env.find(name);
    if (it != env.end()) return it->second;
    if (const Tensor* c = g.constant(name)) return *c;
    fail(ErrorKind::kInternal, "value '", name, "' is not available");
  };

  std::vector<Tensor> ins, outs;
  for (const Node& n : g.nodes) {
    ins.clear();
    outs.clear();
    for (const auto& in : n.inputs) ins.push_back(lookup(in));
    for (const auto& o : n.outputs) {
      if (o.empty()) {
        outs.emplace_back();
      } else {
        const ValueInfo& vi = g.value(o);
        outs.emplace_back(vi.dtype, vi.shape);
      }
    }
    reference::find_kernel(n.op)(n, ins, outs);
    for (size_t i = 0; i < n.outputs.size(); ++i)
      if (!n.outputs[i].empty()) env[n.outputs[i]] = std::move(outs[i]);
    for (const auto& in : n.inputs)
      if (!in.empty() && --uses[in] == 0) env.erase(in);
  }
  std::vector<Tensor> result;
  for (const auto& o : g.outputs) result.push_back(lookup(o));
  return result;
}

MemoryReport graph_weight_memory(const Graph& graph) {
  return {kUnknownBytes, kUnknownBytes, graph.weight_bytes(), kUnknownBytes, kUnknownBytes};
}

MemoryReport ReferenceExecutor::memory() const { return graph_weight_memory(graph_); }

void ReferenceExecutor::run_into(const std::vector<Tensor>& inputs, std::vector<Tensor>& outputs) {
  outputs = run(inputs);
}

}  // namespace dlas

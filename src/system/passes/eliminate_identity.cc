// Removes nodes that pass their input through unchanged: Identity, an inference Dropout
// (its mask output unused) and a Pad whose pads are all zero (exporters write one before
// DenseNet's transition pools). Their consumers read the input instead; a node whose output
// is a graph output stays (the output keeps its name).
#include <algorithm>
#include <unordered_map>
#include <unordered_set>

#include "dlas/system/passes.h"

namespace dlas {
namespace {

bool all_zero(const std::vector<int64_t>& v) {
  return std::all_of(v.begin(), v.end(), [](int64_t x) { return x == 0; });
}

// Whether the Pad's pads (the attribute up to opset 10, the constant input after) are known
// and all zero.
bool zero_pad(const Graph& g, const Node& n) {
  if (n.inputs.empty()) return false;
  if (n.inputs.size() < 2 || n.inputs[1].empty()) {
    const std::vector<int64_t> pads = n.attr_ints("pads", {});
    return !pads.empty() && all_zero(pads);
  }
  const Tensor* pads = g.constant(n.inputs[1]);
  if (!pads || pads->dtype() != DType::kS64) return false;
  const int64_t* p = pads->data<int64_t>();
  return all_zero(std::vector<int64_t>(p, p + pads->numel()));
}

bool passes_through(const Graph& g, const Node& n, const std::unordered_set<std::string>& used) {
  if (n.inputs.empty() || n.inputs[0].empty() || n.outputs.empty() || n.outputs[0].empty())
    return false;
  if (n.op == "Identity") return n.outputs.size() == 1;
  if (n.op == "Dropout") {
    // Inference: the data passes through; a used mask output or training_mode keeps it.
    const bool mask = n.outputs.size() > 1 && !n.outputs[1].empty() && used.count(n.outputs[1]);
    // (Shape inference has refused a training_mode that drops values.)
    const bool training = n.inputs.size() > 2 && !n.inputs[2].empty() && !g.constant(n.inputs[2]);
    return !mask && !training;
  }
  if (n.op == "Pad") return n.outputs.size() == 1 && zero_pad(g, n);
  return false;
}

}  // namespace

int eliminate_identity(Graph& graph) {
  const std::unordered_set<std::string> outputs(graph.outputs.begin(), graph.outputs.end());
  std::unordered_map<std::string, std::string> source;  // removed output -> what it passed on
  auto resolve = [&](std::string v) {
    for (auto it = source.find(v); it != source.end(); it = source.find(v)) v = it->second;
    return v;
  };
  std::unordered_set<std::string> used(outputs);  // values some node or the graph reads
  for (const Node& n : graph.nodes)
    for (const std::string& in : n.inputs) used.insert(in);
  std::vector<Node> kept;
  int removed = 0;
  for (Node& n : graph.nodes) {
    for (std::string& in : n.inputs)
      if (!in.empty()) in = resolve(in);
    if (passes_through(graph, n, used) && !outputs.count(n.outputs[0]) &&
        !graph.constant(n.inputs[0])) {
      source[n.outputs[0]] = n.inputs[0];
      ++removed;
      continue;
    }
    kept.push_back(std::move(n));
  }
  graph.nodes = std::move(kept);
  if (removed) eliminate_dead_code(graph);
  return removed;
}

}  // namespace dlas

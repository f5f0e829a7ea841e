#include <unordered_set>

#include "dlas/system/passes.h"

namespace dlas {

void eliminate_dead_code(Graph& graph) {
  std::unordered_set<std::string> live(graph.outputs.begin(), graph.outputs.end());
  std::vector<bool> keep(graph.nodes.size(), false);
  // Walk backwards from the outputs (nodes are in topological order).
  for (size_t i = graph.nodes.size(); i-- > 0;) {
    const Node& n = graph.nodes[i];
    bool needed = false;
    for (const auto& o : n.outputs)
      if (!o.empty() && live.count(o)) needed = true;
    if (!needed) continue;
    keep[i] = true;
    for (const auto& in : n.inputs)
      if (!in.empty()) live.insert(in);
  }
  std::vector<Node> nodes;
  for (size_t i = 0; i < graph.nodes.size(); ++i)
    if (keep[i]) nodes.push_back(std::move(graph.nodes[i]));
  graph.nodes = std::move(nodes);
  for (auto it = graph.initializers.begin(); it != graph.initializers.end();)
    it = live.count(it->first) ? std::next(it) : graph.initializers.erase(it);
}

}  // namespace dlas

// Small helpers the fusion passes share.
#pragma once

#include <string>
#include <unordered_map>

#include "dlas/model/graph.h"

namespace dlas::passes {

// How many node inputs read each value, plus one per graph output naming it.
inline std::unordered_map<std::string, int> use_counts(const Graph& g) {
  std::unordered_map<std::string, int> uses;
  for (const Node& n : g.nodes)
    for (const std::string& in : n.inputs)
      if (!in.empty()) ++uses[in];
  for (const std::string& o : g.outputs) ++uses[o];
  return uses;
}

// Index of the node producing each value.
inline std::unordered_map<std::string, size_t> producers(const Graph& g) {
  std::unordered_map<std::string, size_t> p;
  for (size_t i = 0; i < g.nodes.size(); ++i)
    for (const std::string& o : g.nodes[i].outputs) p[o] = i;
  return p;
}

// Removes the nodes flagged in `dead` (same size as g.nodes).
inline void erase_nodes(Graph& g, const std::vector<bool>& dead) {
  std::vector<Node> kept;
  for (size_t i = 0; i < g.nodes.size(); ++i)
    if (!dead[i]) kept.push_back(std::move(g.nodes[i]));
  g.nodes = std::move(kept);
}

inline bool is_conv(const Node& n) { return n.op == "Conv" || n.op == "FusedConv"; }

// A Conv (or FusedConv) whose epilogue is still free: no activation, no residual.
inline bool conv_without_epilogue(const Node& n) {
  return is_conv(n) && n.attr_string("activation", "none") == "none" && n.inputs.size() < 4;
}

// Turns a Conv into a FusedConv (no-op on a FusedConv).
inline void make_fused(Node& n) {
  if (n.op == "Conv") n.op = "FusedConv";
}

}  // namespace dlas::passes

// Small helpers the fusion passes share.
#pragma once

#include <algorithm>
#include <limits>
#include <string>
#include <unordered_map>
#include <vector>

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

// Who reads each value: the node indices per value and the use counts (graph outputs
// included), for the fusion passes' "read once, by this node" tests.
struct Readers {
  std::unordered_map<std::string, int> uses;
  std::unordered_map<std::string, std::vector<size_t>> nodes;
  explicit Readers(const Graph& g) : uses(use_counts(g)) {
    for (size_t i = 0; i < g.nodes.size(); ++i)
      for (const std::string& in : g.nodes[i].inputs)
        if (!in.empty()) nodes[in].push_back(i);
  }
  int count(const std::string& value) const {
    auto u = uses.find(value);
    return u == uses.end() ? 0 : u->second;
  }
  // The index of the one node reading `value` when nothing else (no graph output) reads it;
  // `none` otherwise.
  size_t only(const std::string& value, size_t none) const {
    auto c = nodes.find(value);
    if (count(value) != 1 || c == nodes.end() || c->second.size() != 1) return none;
    return c->second[0];
  }
};

// Replaces the nodes at `absorbed` (node indices) with `fused`, which takes the place of the
// last of them in node order -- where every input of the pattern (one computed between its
// first and last node too) is ready -- and flags the others in `dead`.
inline void place_fused(Graph& g, std::vector<bool>& dead, const std::vector<size_t>& absorbed,
                        Node fused) {
  size_t last = 0;
  for (size_t k : absorbed) {
    dead[k] = true;
    last = std::max(last, k);
  }
  dead[last] = false;
  g.nodes[last] = std::move(fused);
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

// A scalar float initializer of any float type (Clip's min/max), or `fallback` when the input
// is absent; false when it is not a constant scalar.
inline bool scalar_input(const Graph& g, const Node& n, size_t i, float fallback, float& out) {
  if (n.inputs.size() <= i || n.inputs[i].empty()) {
    out = fallback;
    return true;
  }
  const Tensor* t = g.constant(n.inputs[i]);
  if (!t || !is_float(t->dtype()) || t->numel() != 1) return false;
  out = t->dtype() == DType::kF32 ? t->data<float>()[0] : t->cast(DType::kF32).data<float>()[0];
  return true;
}

// The fused ops' `activation` name and `activation_params` that one activation node computes
// (Relu, Sigmoid, HardSwish, HardSigmoid, Clip with constant bounds); false for anything else.
inline bool activation_of(const Graph& g, const Node& act, std::string& name,
                          std::vector<float>& params) {
  params.clear();
  if (act.op == "Relu") {
    name = "relu";
  } else if (act.op == "Sigmoid") {
    name = "sigmoid";
  } else if (act.op == "HardSwish") {
    name = "hardswish";
  } else if (act.op == "HardSigmoid") {
    name = "hardsigmoid";
    params = {act.attr_float("alpha", 0.2f), act.attr_float("beta", 0.5f)};
  } else if (act.op == "Clip") {
    float lo, hi;
    if (!scalar_input(g, act, 1, -std::numeric_limits<float>::infinity(), lo) ||
        !scalar_input(g, act, 2, std::numeric_limits<float>::infinity(), hi))
      return false;
    name = "clip";
    params = {lo, hi};
  } else {
    return false;
  }
  return true;
}

// activation_of, plus an exact-form Gelu: the activations a Linear layer's epilogue takes
// (FusedMatMul, QFc).
inline bool linear_activation_of(const Graph& g, const Node& act, std::string& name,
                                 std::vector<float>& params) {
  if (act.op == "Gelu" && act.inputs.size() == 1) {
    name = "gelu";
    params.clear();
    return true;
  }
  return activation_of(g, act, name, params);
}

}  // namespace dlas::passes

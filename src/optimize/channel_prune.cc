// Channel pruning (cp:S): global or per-layer L1 structured pruning over the output channels
// of group-1 convs, with the channels physically removed from everything they reach (see
// include/dlas/optimize/prune.h, "Channel pruning").
#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <optional>
#include <set>
#include <unordered_map>

#include "dlas/core/error.h"
#include "prune_internal.h"

namespace dlas::prune_detail {

namespace {

// Ops that act on each channel on its own (the channel axis passes through unchanged); a
// pruned channel is dropped from their input and output alike.
bool is_channelwise(const std::string& op) {
  static const std::set<std::string> ops = {"Relu",         "Clip",
                                            "LeakyRelu",    "Sigmoid",
                                            "Tanh",         "HardSigmoid",
                                            "HardSwish",    "Elu",
                                            "Selu",         "Celu",
                                            "Softplus",     "Softsign",
                                            "Identity",     "Dropout",
                                            "Abs",          "Neg",
                                            "Gelu",         "Erf",
                                            "MaxPool",      "AveragePool",
                                            "LpPool",       "GlobalAveragePool",
                                            "GlobalMaxPool"};
  return ops.count(op) != 0;
}

// The same, restricted to ops that are elementwise on flattened features (after Flatten).
bool is_elementwise(const std::string& op) {
  return is_channelwise(op) && op.find("Pool") == std::string::npos;
}

// A Gemm (or conv) that reads the pruned channels as its reduction input.
struct Consumer {
  size_t node;
  int64_t features_per_channel = 0;  // 0: Conv (input channels); > 0: Gemm after Flatten
};

// Everything the output channels of one conv reach.
struct Region {
  std::vector<size_t> batch_norms;  // their scale, B, mean and var shrink
  std::vector<size_t> depthwise;    // output channels, bias and group shrink with ours
  std::vector<Consumer> consumers;  // input channels / features shrink
  std::string blocked;              // non-empty: why the channels stay
};

class RegionTracer {
 public:
  explicit RegionTracer(const Graph& g) : g_(g) {
    for (size_t i = 0; i < g.nodes.size(); ++i)
      for (size_t k = 0; k < g.nodes[i].inputs.size(); ++k) {
        const std::string& in = g.nodes[i].inputs[k];
        if (in.empty()) continue;
        uses_[in].push_back({i, k});
        if (g.constant(in)) ++constant_uses_[in];
      }
    outputs_.insert(g.outputs.begin(), g.outputs.end());
  }

  // An f32 constant of the given rank used by exactly one node input ("" allowed when
  // optional): safe to replace by a shrunk copy.
  bool own_constant(const std::string& name, size_t rank, bool optional) const {
    if (name.empty()) return optional;
    const Tensor* t = g_.constant(name);
    if (!t || t->dtype() != DType::kF32 || static_cast<size_t>(t->rank()) != rank) return false;
    const auto it = constant_uses_.find(name);
    return it != constant_uses_.end() && it->second == 1;
  }

  Region trace(const Node& producer) const {
    Region r;
    std::set<size_t> seen;
    follow(producer.outputs[0], 0, r, seen);
    return r;
  }

 private:
  static void block(Region& r, const std::string& why) {
    if (r.blocked.empty()) r.blocked = why;
  }

  // Only the node's first output carries the channels; the others must be unused.
  bool single_output(const Node& n) const {
    for (size_t k = 1; k < n.outputs.size(); ++k)
      if (!n.outputs[k].empty() && (uses_.count(n.outputs[k]) || outputs_.count(n.outputs[k])))
        return false;
    return !n.outputs.empty();
  }

  // Follows `value` (channels on axis 1, or after Flatten `per_channel` features each).
  void follow(const std::string& value, int64_t per_channel, Region& r,
              std::set<size_t>& seen) const {
    if (!r.blocked.empty()) return;
    if (outputs_.count(value)) return block(r, "reaches graph output '" + value + "'");
    const auto it = uses_.find(value);
    if (it == uses_.end()) return;
    for (const auto& [index, slot] : it->second) {
      if (!r.blocked.empty()) return;
      if (!seen.insert(index).second)
        return block(r, "reaches node '" + g_.nodes[index].name + "' twice");
      const Node& n = g_.nodes[index];
      const std::string feeds = "feeds " + n.op + " '" + n.name + "'";
      if (slot != 0 || !single_output(n)) return block(r, feeds);
      if (per_channel > 0) {
        if (is_elementwise(n.op)) {
          follow(n.outputs[0], per_channel, r, seen);
        } else if (n.op == "Gemm" && n.attr_int("transA", 0) == 0 && n.inputs.size() >= 2 &&
                   own_constant(n.inputs[1], 2, false)) {
          r.consumers.push_back({index, per_channel});
        } else {
          block(r, feeds);
        }
        continue;
      }
      if (n.op == "BatchNormalization") {
        bool ok = n.inputs.size() == 5;
        for (size_t k = 1; ok && k < 5; ++k) ok = own_constant(n.inputs[k], 1, false);
        if (!ok) return block(r, feeds + " (statistics not constant)");
        r.batch_norms.push_back(index);
        follow(n.outputs[0], 0, r, seen);
      } else if (is_channelwise(n.op)) {
        follow(n.outputs[0], 0, r, seen);
      } else if (n.op == "Conv" && n.inputs.size() >= 2) {
        const Tensor* w = g_.constant(n.inputs[1]);
        const int64_t group = n.attr_int("group", 1);
        if (!w || !own_constant(n.inputs[1], w->rank(), false) || w->rank() < 3)
          return block(r, feeds + " (weight not a constant of its own)");
        if (group == 1) {
          r.consumers.push_back({index, 0});
        } else if (w->dim(1) == 1 && w->dim(0) == group &&
                   own_constant(n.inputs.size() > 2 ? n.inputs[2] : "", 1, true)) {
          r.depthwise.push_back(index);  // one filter per channel: the channels pass through
          follow(n.outputs[0], 0, r, seen);
        } else {
          block(r, feeds + " (grouped)");
        }
      } else if (n.op == "Flatten" && n.attr_int("axis", 1) == 1 && g_.has_value(value)) {
        const Shape& s = g_.value(value).shape;
        int64_t hw = 1;
        for (size_t d = 2; d < s.size(); ++d) hw *= s[d];
        if (s.size() < 2 || hw <= 0) return block(r, feeds);
        follow(n.outputs[0], hw, r, seen);
      } else {
        block(r, feeds);
      }
    }
  }

  const Graph& g_;
  std::unordered_map<std::string, std::vector<std::pair<size_t, size_t>>> uses_;
  std::unordered_map<std::string, int> constant_uses_;
  std::set<std::string> outputs_;
};

// The tensor with only the `kept` indices of dimension `dim`.
Tensor gather(const Tensor& t, size_t dim, const std::vector<int64_t>& kept) {
  Shape shape = t.shape();
  int64_t outer = 1, inner = 1;
  for (size_t d = 0; d < dim; ++d) outer *= shape[d];
  for (size_t d = dim + 1; d < shape.size(); ++d) inner *= shape[d];
  const int64_t n = shape[dim];
  shape[dim] = std::ssize(kept);
  Tensor out(DType::kF32, shape);
  const float* src = t.data<float>();
  float* dst = out.data<float>();
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t k : kept) {
      std::copy_n(src + (o * n + k) * inner, inner, dst);
      dst += inner;
    }
  return out;
}

std::vector<int64_t> iota(int64_t n) {
  std::vector<int64_t> v(static_cast<size_t>(n));
  std::iota(v.begin(), v.end(), int64_t{0});
  return v;
}

// Feature indices of the kept channels when each channel is `per_channel` features.
std::vector<int64_t> features_of(const std::vector<int64_t>& channels, int64_t per_channel) {
  std::vector<int64_t> f;
  f.reserve(channels.size() * static_cast<size_t>(per_channel));
  for (int64_t c : channels)
    for (int64_t s = 0; s < per_channel; ++s) f.push_back(c * per_channel + s);
  return f;
}

// One prunable conv: its node, its region and its channels' normalised scores.
struct Candidate {
  size_t node;
  Region region;
  std::vector<float> scores;
  std::vector<uint8_t> pruned;
};

}  // namespace

PruneReport prune_channels(Graph& graph, const PruneSpec& spec) {
  graph.infer();
  PruneReport r;
  r.spec = spec;
  r.params_before = graph.param_count();
  r.macs_before = graph.macs();
  r.layers = find_layers(graph, spec.prune_first, false);
  std::map<std::string, size_t> layer_of;  // node name -> index in r.layers
  for (size_t i = 0; i < r.layers.size(); ++i) {
    PruneLayer& l = r.layers[i];
    layer_of[l.node] = i;
    const Tensor* w = graph.constant(l.weight);
    l.out_channels = l.rows;
    l.in_channels = l.op == "Gemm" ? l.cols : w->dim(1) * l.groups;
    if (!l.pruned) l.note = &l == &r.layers.back() ? "classifier" : "first conv";
    l.pruned = false;
  }

  // The candidates: group-1 Convs (not the first unless asked, not the classifier) whose
  // channels reach only what can shrink with them.
  const RegionTracer tracer(graph);
  std::vector<Candidate> candidates;
  for (size_t i = 0; i < graph.nodes.size(); ++i) {
    const Node& n = graph.nodes[i];
    const auto it = layer_of.find(n.name);
    if (it == layer_of.end()) continue;
    PruneLayer& l = r.layers[it->second];
    if (!l.note.empty()) continue;
    if (n.op != "Conv") {
      l.note = n.op == "Gemm" ? "not a conv" : n.op + " (only Conv is channel-pruned)";
      continue;
    }
    if (l.groups != 1) continue;  // depthwise: follows its producer (noted there)
    Region region = tracer.trace(n);
    if (region.blocked.empty() && !tracer.own_constant(n.inputs[1], l.shape.size(), false))
      region.blocked = "weight shared with another node";
    if (region.blocked.empty() && n.inputs.size() > 2 && !tracer.own_constant(n.inputs[2], 1, true))
      region.blocked = "bias shared or not constant";
    if (!region.blocked.empty()) {
      l.note = region.blocked;
      continue;
    }
    l.pruned = true;
    Candidate c{i, std::move(region), {}, {}};
    const float* w = graph.constant(l.weight)->data<float>();
    c.scores.resize(static_cast<size_t>(l.rows));
    double total = 0;
    for (int64_t k = 0; k < l.rows; ++k) {
      double sum = 0;
      for (int64_t j = 0; j < l.cols; ++j) sum += std::fabs(w[k * l.cols + j]);
      c.scores[static_cast<size_t>(k)] = static_cast<float>(sum);
      total += sum;
    }
    const double mean = total / static_cast<double>(l.rows);
    for (float& s : c.scores)
      s = std::isnan(s) ? INFINITY : mean > 0 && std::isfinite(mean) ? s / mean : 0.f;
    c.pruned.assign(c.scores.size(), 0);
    for (size_t d : c.region.depthwise)
      r.layers[layer_of.at(graph.nodes[d].name)].note = "depthwise: follows '" + n.name + "'";
    r.prunable_channels += l.rows;
    candidates.push_back(std::move(c));
  }

  // Selection: the smallest normalised scores (ties: layer order, then channel order), one
  // channel per layer always kept.
  struct Unit {
    float score;
    size_t cand;
    int64_t channel;
  };
  auto select = [](std::vector<Unit> units, int64_t k, std::vector<Candidate>& cands) {
    std::stable_sort(units.begin(), units.end(),
                     [](const Unit& a, const Unit& b) { return a.score < b.score; });
    std::vector<int64_t> left(cands.size());
    for (size_t i = 0; i < cands.size(); ++i) left[i] = std::ssize(cands[i].scores);
    int64_t done = 0;
    for (const Unit& u : units) {
      if (done >= k) break;
      if (left[u.cand] <= 1) continue;
      cands[u.cand].pruned[static_cast<size_t>(u.channel)] = 1;
      --left[u.cand];
      ++done;
    }
    return done;
  };
  if (spec.scope == PruneScope::kLayer) {
    for (size_t i = 0; i < candidates.size(); ++i) {
      std::vector<Unit> units;  // this layer alone
      const int64_t n = std::ssize(candidates[i].scores);
      for (int64_t k = 0; k < n; ++k)
        units.push_back({candidates[i].scores[static_cast<size_t>(k)], i, k});
      r.pruned_channels += select(std::move(units), target_count(spec.sparsity, n), candidates);
    }
  } else {
    std::vector<Unit> units;
    for (size_t i = 0; i < candidates.size(); ++i)
      for (int64_t k = 0; k < std::ssize(candidates[i].scores); ++k)
        units.push_back({candidates[i].scores[static_cast<size_t>(k)], i, k});
    r.pruned_channels =
        select(std::move(units), target_count(spec.sparsity, r.prunable_channels), candidates);
  }

  // Index lists per initializer dimension, then the shrunk copies.
  std::map<std::string, std::map<size_t, std::vector<int64_t>>> cuts;
  auto cut = [&](const std::string& name, size_t dim, const std::vector<int64_t>& kept) {
    if (!name.empty()) cuts[name][dim] = kept;
  };
  for (const Candidate& c : candidates) {
    const Node& n = graph.nodes[c.node];
    PruneLayer& l = r.layers[layer_of.at(n.name)];
    std::vector<int64_t> kept;
    for (int64_t k = 0; k < std::ssize(c.pruned); ++k)
      if (!c.pruned[static_cast<size_t>(k)]) kept.push_back(k);
    l.kept_outputs = kept;
    if (std::ssize(kept) == l.rows) continue;
    cut(n.inputs[1], 0, kept);
    if (n.inputs.size() > 2) cut(n.inputs[2], 0, kept);
    for (size_t b : c.region.batch_norms)
      for (size_t k = 1; k < 5; ++k) cut(graph.nodes[b].inputs[k], 0, kept);
    for (size_t d : c.region.depthwise) {
      Node& dw = graph.nodes[d];
      cut(dw.inputs[1], 0, kept);
      if (dw.inputs.size() > 2) cut(dw.inputs[2], 0, kept);
      dw.attrs["group"] = static_cast<int64_t>(kept.size());
      PruneLayer& dl = r.layers[layer_of.at(dw.name)];
      dl.kept_outputs = dl.kept_inputs = kept;
    }
    for (const Consumer& u : c.region.consumers) {
      const Node& m = graph.nodes[u.node];
      PruneLayer& ml = r.layers[layer_of.at(m.name)];
      if (u.features_per_channel == 0) {
        cut(m.inputs[1], 1, kept);
        ml.kept_inputs = kept;
      } else {
        ml.kept_inputs = features_of(kept, u.features_per_channel);
        cut(m.inputs[1], m.attr_int("transB", 0) ? 1 : 0, ml.kept_inputs);
      }
    }
  }
  for (const auto& [name, dims] : cuts) {
    Tensor t = graph.initializers.at(name);
    for (const auto& [dim, kept] : dims) t = gather(t, dim, kept);
    graph.initializers[name] = std::move(t);
  }
  graph.infer();

  // The report describes the shrunk weights.
  for (PruneLayer& l : r.layers) {
    const Tensor* w = graph.constant(l.weight);
    if (l.kept_outputs.empty()) l.kept_outputs = iota(l.out_channels);
    if (l.kept_inputs.empty()) l.kept_inputs = iota(l.in_channels);
    if (l.note.empty() && !l.pruned) l.note = "grouped conv (follows no prunable conv)";
    l.shape = w->shape();
    l.params = w->numel();
    if (l.op == "Gemm") {
      l.rows = l.transposed ? w->dim(1) : w->dim(0);
      l.cols = l.transposed ? w->dim(0) : w->dim(1);
    } else {
      l.rows = w->dim(0);
      l.cols = w->numel() / l.rows;
      for (const Node& n : graph.nodes)
        if (n.name == l.node) l.groups = n.attr_int("group", 1);
    }
  }
  tally(graph, r);
  r.params_after = graph.param_count();
  r.macs_after = graph.macs();
  return r;
}

}  // namespace dlas::prune_detail

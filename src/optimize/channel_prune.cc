// Channel pruning (cp:S): global or per-layer L1 structured pruning over the output channels
// of group-1 convs, organised in dependency groups (channels that residual adds, squeeze-
// excite products and the like tie together), with the channels physically removed from
// everything they reach (see include/dlas/optimize/prune.h, "Channel pruning").
//
// How: one pass over the nodes in topological order gives every value with a channel axis a
// "channel map" -- its channels, in order, as segments, each segment being all channels of
// one group. A group starts at a group-1 conv's output; channel-wise ops, BatchNormalization
// and depthwise convs pass the map on; Concat concatenates maps; Add/Sub/Mul/Div of two
// mapped values unify their groups segment by segment (union-find) so they share one kept
// set; anything else fixes (keeps whole) the groups it reads. After selection, every cut is
// derived from the maps: a value's kept indices are its segments' kept sets at their offsets.
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

bool is_binary_elementwise(const std::string& op) {
  return op == "Add" || op == "Sub" || op == "Mul" || op == "Div";
}

// A run of channels: all `width` channels of one group, in order.
struct Segment {
  size_t group;
  int64_t width;
};

// The channels of a value: axis 1 (per_channel == 0), or after Flatten `per_channel`
// consecutive features per channel.
struct ChannelMap {
  std::vector<Segment> segments;
  int64_t per_channel = 0;
  int64_t channels() const {
    int64_t n = 0;
    for (const Segment& s : segments) n += s.width;
    return n;
  }
};

// A dependency group: channels removed together. Union-find over groups; the data lives at
// the root.
struct Group {
  size_t parent;
  int64_t width;
  std::vector<size_t> members;    // group-1 conv nodes whose output channels these are
  std::string fixed;              // non-empty: kept whole, and why
  std::vector<std::string> ties;  // the nodes that joined groups into this one
};

// A conv or Gemm that reads mapped channels as its reduction input, or a node whose
// per-channel constants follow the map (BatchNormalization, depthwise conv).
struct Use {
  size_t node;
  ChannelMap input;
};

class ChannelGraph {
 public:
  ChannelGraph(const Graph& g, const std::map<std::string, std::string>& producer_blocks) : g_(g) {
    for (size_t i = 0; i < g.nodes.size(); ++i)
      for (const std::string& in : g.nodes[i].inputs) {
        if (in.empty()) continue;
        used_.insert(in);
        if (g.constant(in)) ++constant_uses_[in];
      }
    for (size_t i = 0; i < g.nodes.size(); ++i) visit(i, producer_blocks);
    for (const std::string& o : g.outputs)
      if (const ChannelMap* m = find(o)) fix(*m, "reaches graph output '" + o + "'");
  }

  size_t root(size_t g) const {
    while (groups_[g].parent != g) g = groups_[g].parent;
    return g;
  }
  const Group& group(size_t g) const { return groups_[root(g)]; }
  size_t group_count() const { return groups_.size(); }
  const std::vector<Use>& batch_norms() const { return batch_norms_; }
  const std::vector<Use>& depthwise() const { return depthwise_; }
  const std::vector<Use>& consumers() const { return consumers_; }
  const ChannelMap* output_map(size_t node) const {
    const Node& n = g_.nodes[node];
    return n.outputs.empty() ? nullptr : find(n.outputs[0]);
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

 private:
  const ChannelMap* find(const std::string& value) const {
    const auto it = maps_.find(value);
    return it == maps_.end() ? nullptr : &it->second;
  }

  size_t new_group(int64_t width, std::string fixed) {
    groups_.push_back({groups_.size(), width, {}, std::move(fixed), {}});
    return groups_.size() - 1;
  }

  // The value's map; values nobody mapped (graph inputs, outputs of ops that are not
  // followed) get a fixed group of their own when they have a channel axis.
  const ChannelMap* map_of(const std::string& value) {
    if (const ChannelMap* m = find(value)) return m;
    if (value.empty() || g_.constant(value) || !g_.has_value(value)) return nullptr;
    const Shape& s = g_.value(value).shape;
    if (s.size() < 2 || s[1] <= 0) return nullptr;
    bool input = false;
    for (const ValueInfo& v : g_.inputs) input |= v.name == value;
    ChannelMap m;
    m.segments.push_back(
        {new_group(s[1], (input ? "tied to graph input '" : "tied to '") + value + "'"), s[1]});
    return &(maps_[value] = std::move(m));
  }

  void fix(const ChannelMap& m, const std::string& why) {
    for (const Segment& s : m.segments) {
      Group& r = groups_[root(s.group)];
      if (r.fixed.empty()) r.fixed = why;
    }
  }

  // Ties a's and b's channels one to one; false when their segments do not line up.
  bool unify(const ChannelMap& a, const ChannelMap& b, const std::string& via) {
    if (a.segments.size() != b.segments.size() || a.per_channel != b.per_channel) return false;
    for (size_t i = 0; i < a.segments.size(); ++i)
      if (a.segments[i].width != b.segments[i].width) return false;
    for (size_t i = 0; i < a.segments.size(); ++i) {
      const size_t x = root(a.segments[i].group), y = root(b.segments[i].group);
      if (x == y) continue;
      const size_t keep = std::min(x, y), gone = std::max(x, y);  // older group is the root
      Group& k = groups_[keep];
      Group& o = groups_[gone];
      o.parent = keep;
      k.members.insert(k.members.end(), o.members.begin(), o.members.end());
      k.ties.insert(k.ties.end(), o.ties.begin(), o.ties.end());
      k.ties.push_back(via);
      if (k.fixed.empty()) k.fixed = o.fixed;
    }
    return true;
  }

  // Only the node's first output carries the channels; the others must be unused.
  bool single_output(const Node& n) const {
    for (size_t k = 1; k < n.outputs.size(); ++k)
      if (!n.outputs[k].empty() && used_.count(n.outputs[k])) return false;
    return !n.outputs.empty();
  }

  void set(const Node& n, ChannelMap m) { maps_[n.outputs[0]] = std::move(m); }

  // The node reads mapped channels in a way nothing follows: they stay whole.
  void opaque(const Node& n, const std::string& why) {
    for (const std::string& in : n.inputs)
      if (const ChannelMap* m = find(in)) fix(*m, why);
  }

  void visit(size_t index, const std::map<std::string, std::string>& producer_blocks) {
    const Node& n = g_.nodes[index];
    const std::string feeds = "feeds " + n.op + " '" + n.name + "'";
    if (!single_output(n)) return opaque(n, feeds);
    // Inputs past the first must not carry mapped channels, except for the binary ops.
    if (!is_binary_elementwise(n.op) && n.op != "Concat")
      for (size_t k = 1; k < n.inputs.size(); ++k)
        if (find(n.inputs[k])) return opaque(n, feeds);
    if (is_binary_elementwise(n.op) && n.inputs.size() == 2) return visit_binary(n, feeds);
    if (n.op == "Concat") return visit_concat(n, feeds);
    const ChannelMap* in = n.inputs.empty() ? nullptr : map_of(n.inputs[0]);
    if (n.op == "Conv") return visit_conv(index, in, producer_blocks);
    if (!in) return;            // constants only, or no channel axis
    if (in->per_channel > 0) {  // flattened features
      if (is_elementwise(n.op)) return set(n, *in);
      if (n.op == "Gemm" && n.attr_int("transA", 0) == 0 && n.inputs.size() >= 2 &&
          own_constant(n.inputs[1], 2, false))
        return consumers_.push_back({index, *in});
      return opaque(n, feeds);
    }
    if (n.op == "BatchNormalization") {
      bool ok = n.inputs.size() == 5;
      for (size_t k = 1; ok && k < 5; ++k) ok = own_constant(n.inputs[k], 1, false);
      if (!ok) return opaque(n, feeds + " (statistics not constant)");
      batch_norms_.push_back({index, *in});
      return set(n, *in);
    }
    if (is_channelwise(n.op)) return set(n, *in);
    if (n.op == "Flatten") {
      const Shape& s = g_.value(n.inputs[0]).shape;
      int64_t hw = 1;
      for (size_t d = 2; d < s.size(); ++d) hw *= s[d];
      if (n.attr_int("axis", 1) != 1 || s.size() < 2 || hw <= 0) return opaque(n, feeds);
      ChannelMap m = *in;
      m.per_channel = hw;
      return set(n, std::move(m));
    }
    opaque(n, feeds);
  }

  void visit_concat(const Node& n, const std::string& feeds) {
    const int64_t rank = static_cast<int64_t>(g_.value(n.outputs[0]).shape.size());
    int64_t axis = n.attr_int("axis", 1);
    if (axis < 0) axis += rank;
    std::vector<const ChannelMap*> parts;
    for (const std::string& v : n.inputs) parts.push_back(map_of(v));
    for (const ChannelMap* p : parts)
      if (!p || p->per_channel > 0 || axis != 1) return opaque(n, feeds);
    ChannelMap m;
    for (const ChannelMap* p : parts)
      m.segments.insert(m.segments.end(), p->segments.begin(), p->segments.end());
    set(n, std::move(m));
  }

  void visit_binary(const Node& n, const std::string& feeds) {
    const std::string via = n.op + " '" + n.name + "'";
    const ChannelMap* a = map_of(n.inputs[0]);
    const ChannelMap* b = map_of(n.inputs[1]);
    // A constant operand must broadcast over the channels (one value per channel would
    // have to shrink with them; not followed).
    for (int k = 0; k < 2; ++k) {
      const Tensor* c = g_.constant(n.inputs[static_cast<size_t>(k)]);
      if (!c) continue;
      const ChannelMap* other = k == 0 ? b : a;
      if (c->numel() != 1) return opaque(n, feeds + " (per-channel constant)");
      if (other) set(n, *other);
      return;
    }
    if (!a || !b) return opaque(n, feeds);
    if (g_.value(n.inputs[0]).shape.size() != g_.value(n.inputs[1]).shape.size())
      return opaque(n, feeds + " (ranks differ)");
    const Shape& out = g_.value(n.outputs[0]).shape;
    const int64_t ca = a->channels(), cb = b->channels();
    if (a->per_channel != b->per_channel || out.size() < 2) return opaque(n, feeds);
    if (ca == cb) {
      if (!unify(*a, *b, via)) return opaque(n, feeds + " (channel segments differ)");
      return set(n, *a);
    }
    // One operand broadcasts a single channel over the other's.
    const ChannelMap* wide = ca > cb ? a : b;
    const ChannelMap* one = ca > cb ? b : a;
    if (one->channels() != 1) return opaque(n, feeds);
    fix(*one, feeds + " (broadcast over channels)");
    set(n, *wide);
  }

  void visit_conv(size_t index, const ChannelMap* in,
                  const std::map<std::string, std::string>& producer_blocks) {
    const Node& n = g_.nodes[index];
    const std::string feeds = "feeds Conv '" + n.name + "'";
    const Tensor* w = n.inputs.size() >= 2 ? g_.constant(n.inputs[1]) : nullptr;
    const int64_t group = n.attr_int("group", 1);
    const bool own = w && w->rank() >= 3 && own_constant(n.inputs[1], w->rank(), false);
    const bool own_bias = own_constant(n.inputs.size() > 2 ? n.inputs[2] : "", 1, true);
    const Shape& out = g_.value(n.outputs[0]).shape;
    if (in && in->per_channel > 0) return opaque(n, feeds);
    if (!own || out.size() < 2) {
      if (in) fix(*in, feeds + " (weight not a constant of its own)");
      return;
    }
    if (group == 1) {
      if (in) consumers_.push_back({index, *in});
      const auto it = producer_blocks.find(n.name);
      std::string why = it != producer_blocks.end() ? it->second : "";
      if (why.empty() && !own_bias) why = "bias shared or not constant";
      ChannelMap m;
      const size_t gid = new_group(out[1], why.empty() ? "" : "tied to " + why);
      if (why.empty()) groups_[gid].members.push_back(index);
      m.segments.push_back({gid, out[1]});
      return set(n, std::move(m));
    }
    if (in && w->dim(1) == 1 && w->dim(0) == group && group == in->channels() && own_bias) {
      depthwise_.push_back({index, *in});  // one filter per channel: the channels pass through
      return set(n, *in);
    }
    if (in) fix(*in, feeds + " (grouped)");
  }

  const Graph& g_;
  std::set<std::string> used_;
  std::unordered_map<std::string, int> constant_uses_;
  std::unordered_map<std::string, ChannelMap> maps_;
  std::vector<Group> groups_;
  std::vector<Use> batch_norms_, depthwise_, consumers_;
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

// The normalised L1 score of each output channel of a conv: its filter's L1 norm over the
// layer's mean filter L1 norm (NaN filters score +inf: kept).
std::vector<double> conv_scores(const Tensor& w) {
  const int64_t rows = w.dim(0), cols = w.numel() / rows;
  const float* p = w.data<float>();
  std::vector<double> s(static_cast<size_t>(rows));
  double total = 0;
  for (int64_t k = 0; k < rows; ++k) {
    double sum = 0;
    for (int64_t j = 0; j < cols; ++j) sum += std::fabs(p[k * cols + j]);
    s[static_cast<size_t>(k)] = static_cast<float>(sum);  // summed in double, kept as float
    total += static_cast<float>(sum);
  }
  const double mean = total / static_cast<double>(rows);
  for (double& v : s)
    v = std::isnan(v) ? INFINITY : mean > 0 && std::isfinite(mean) ? v / mean : 0.0;
  return s;
}

// The report's layers, indexed by node name, and the group-1 convs whose output channels
// never shrink (the first conv, the classifier, convs find_layers skipped) with why.
struct LayerIndex {
  std::map<std::string, size_t> layer_of;              // node name -> index in r.layers
  std::map<std::string, std::string> producer_blocks;  // group-1 convs that never shrink
};

LayerIndex index_layers(const Graph& graph, PruneReport& r) {
  LayerIndex ix;
  for (size_t i = 0; i < r.layers.size(); ++i) {
    PruneLayer& l = r.layers[i];
    ix.layer_of[l.node] = i;
    const Tensor* w = graph.constant(l.weight);
    l.out_channels = l.rows;
    l.in_channels = l.op == "Gemm" ? l.cols : w->dim(1) * l.groups;
    if (!l.pruned) {
      l.note = &l == &r.layers.back() ? "classifier" : "first conv";
      ix.producer_blocks[l.node] = "the " + l.note + " '" + l.node + "'";
    }
    l.pruned = false;
  }
  for (const Node& n : graph.nodes)  // a Conv weight find_layers skipped (shared, not f32)
    if (n.op == "Conv" && !ix.layer_of.count(n.name))
      ix.producer_blocks[n.name] = "Conv '" + n.name + "' (weight shared or not f32)";
  return ix;
}

// A prunable group: its channels' scores (the mean over the members of the normalised
// filter L1 norms) and which channels are removed.
struct Candidate {
  size_t group;
  std::vector<double> scores;
  std::vector<uint8_t> pruned;
};

// The group's first conv (in graph order): its head.
size_t first_member(const ChannelGraph& cg, size_t group) {
  const std::vector<size_t>& m = cg.group(group).members;
  return *std::min_element(m.begin(), m.end());
}

// The group's members, sorted (the first is the group's head).
std::vector<size_t> sorted_members(const ChannelGraph& cg, size_t group) {
  std::vector<size_t> members = cg.group(group).members;
  std::sort(members.begin(), members.end());
  return members;
}

// Notes the members of every group (ties, or why the group is kept whole) and returns the
// prunable groups in order of their first member.
std::vector<Candidate> prunable_groups(const Graph& graph, const ChannelGraph& cg,
                                       const LayerIndex& ix, PruneReport& r) {
  std::vector<Candidate> candidates;
  for (size_t gid = 0; gid < cg.group_count(); ++gid) {
    if (cg.root(gid) != gid) continue;
    const Group& grp = cg.group(gid);
    if (grp.members.empty()) continue;
    const std::vector<size_t> members = sorted_members(cg, gid);
    const std::string head = graph.nodes[members[0]].name;
    std::string tie_note;
    if (members.size() > 1) {
      tie_note = "group of " + std::to_string(members.size()) + " convs led by '" + head + "'";
      if (!grp.ties.empty()) tie_note += " (tied by " + grp.ties.front() + ", ...)";
    }
    for (size_t m : members) {
      PruneLayer& l = r.layers[ix.layer_of.at(graph.nodes[m].name)];
      l.note = grp.fixed.empty() ? tie_note : grp.fixed;
      if (!grp.fixed.empty() && members.size() > 1) l.note += " (" + tie_note + ")";
    }
    if (!grp.fixed.empty()) continue;
    Candidate c{gid, std::vector<double>(static_cast<size_t>(grp.width), 0.0), {}};
    for (size_t m : members) {
      const std::vector<double> s = conv_scores(*graph.constant(graph.nodes[m].inputs[1]));
      for (size_t k = 0; k < s.size(); ++k)
        c.scores[k] += s[k] / static_cast<double>(members.size());
      r.layers[ix.layer_of.at(graph.nodes[m].name)].pruned = true;
    }
    c.pruned.assign(c.scores.size(), 0);
    r.prunable_channels += grp.width;
    candidates.push_back(std::move(c));
  }
  std::stable_sort(candidates.begin(), candidates.end(),
                   [&](const Candidate& a, const Candidate& b) {
                     return first_member(cg, a.group) < first_member(cg, b.group);
                   });
  return candidates;
}

// One channel of one candidate, by score.
struct Unit {
  double score;
  size_t cand;
  int64_t channel;
};

void add_units(const std::vector<Candidate>& candidates, size_t i, std::vector<Unit>& units) {
  for (int64_t k = 0; k < std::ssize(candidates[i].scores); ++k)
    units.push_back({candidates[i].scores[static_cast<size_t>(k)], i, k});
}

// Removes up to k of `units`, smallest scores first (ties: group order, then channel order),
// always keeping one channel per group. Returns how many it removed.
int64_t remove_smallest(std::vector<Unit> units, int64_t k, std::vector<Candidate>& cands) {
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
}

// Selection: per group (layer scope) or over all groups at once (global scope).
void select_channels(std::vector<Candidate>& candidates, const PruneSpec& spec, PruneReport& r) {
  if (spec.scope == PruneScope::kLayer) {
    for (size_t i = 0; i < candidates.size(); ++i) {
      std::vector<Unit> units;  // this group alone
      add_units(candidates, i, units);
      const int64_t n = std::ssize(candidates[i].scores);
      r.pruned_channels +=
          remove_smallest(std::move(units), target_count(spec.sparsity, n), candidates);
    }
  } else {
    std::vector<Unit> units;
    for (size_t i = 0; i < candidates.size(); ++i) add_units(candidates, i, units);
    r.pruned_channels = remove_smallest(
        std::move(units), target_count(spec.sparsity, r.prunable_channels), candidates);
  }
}

// Kept counts rounded up to a multiple (fills vector lanes and GEMM tiles): the removed
// channels with the highest scores come back.
void round_kept_up(std::vector<Candidate>& candidates, int64_t multiple, PruneReport& r) {
  if (multiple <= 1) return;
  for (Candidate& c : candidates) {
    const int64_t width = std::ssize(c.scores);
    int64_t kept = width - std::count(c.pruned.begin(), c.pruned.end(), uint8_t{1});
    const int64_t want = std::min(width, (kept + multiple - 1) / multiple * multiple);
    std::vector<int64_t> back;
    for (int64_t k = 0; k < width; ++k)
      if (c.pruned[static_cast<size_t>(k)]) back.push_back(k);
    std::stable_sort(back.begin(), back.end(), [&](int64_t a, int64_t b) {
      return c.scores[static_cast<size_t>(a)] > c.scores[static_cast<size_t>(b)];
    });
    for (size_t i = 0; kept < want; ++i, ++kept) {
      c.pruned[static_cast<size_t>(back[i])] = 0;
      --r.pruned_channels;
    }
  }
}

// Every cut the selection implies: index lists per initializer dimension, derived from the
// channel maps (a value's kept indices are its segments' kept sets at their offsets).
class CutPlan {
 public:
  CutPlan(Graph& graph, const ChannelGraph& cg, const LayerIndex& ix, PruneReport& r)
      : graph_(graph), cg_(cg), ix_(ix), r_(r), group_kept_(cg.group_count()) {}

  // The selected groups: their kept channels, their convs' filters and biases.
  void groups(const std::vector<Candidate>& candidates) {
    for (const Candidate& c : candidates) {
      std::vector<int64_t> kept;
      for (int64_t k = 0; k < std::ssize(c.pruned); ++k)
        if (!c.pruned[static_cast<size_t>(k)]) kept.push_back(k);
      group_kept_[c.group] = std::move(kept);
    }
    for (const Candidate& c : candidates) {
      ChannelGroup& rg = r_.groups.emplace_back();
      rg.channels = std::ssize(c.scores);
      rg.kept = *group_kept_[c.group];
      for (size_t m : sorted_members(cg_, c.group)) rg.convs.push_back(graph_.nodes[m].name);
    }
    for (const Candidate& c : candidates)
      for (size_t m : cg_.group(c.group).members) {
        const Node& n = graph_.nodes[m];
        PruneLayer& l = layer(n.name);
        l.kept_outputs = *group_kept_[c.group];
        cut(n.inputs[1], 0, l.kept_outputs, l.out_channels);
        if (n.inputs.size() > 2) cut(n.inputs[2], 0, l.kept_outputs, l.out_channels);
      }
  }

  void batch_norms() {
    for (const Use& u : cg_.batch_norms()) {
      const std::vector<int64_t> kept = kept_of(u.input);
      for (size_t k = 1; k < 5; ++k)
        cut(graph_.nodes[u.node].inputs[k], 0, kept, u.input.channels());
    }
  }

  // Depthwise convs follow their input's channels (their group count shrinks with them).
  void depthwise() {
    for (const Use& u : cg_.depthwise()) {
      Node& dw = graph_.nodes[u.node];
      const std::vector<int64_t> kept = kept_of(u.input);
      cut(dw.inputs[1], 0, kept, u.input.channels());
      if (dw.inputs.size() > 2) cut(dw.inputs[2], 0, kept, u.input.channels());
      dw.attrs["group"] = static_cast<int64_t>(kept.size());
      PruneLayer& dl = layer(dw.name);
      dl.kept_outputs = dl.kept_inputs = kept;
      for (const Segment& s : u.input.segments) {  // name the conv it follows
        const Group& grp = cg_.group(s.group);
        if (grp.members.empty()) continue;
        dl.note = "depthwise: follows '" + graph_.nodes[first_member(cg_, s.group)].name + "'";
        break;
      }
      if (dl.note.empty()) dl.note = "depthwise: follows no prunable conv";
    }
  }

  // Convs and Gemms reading pruned channels lose those input channels (features).
  void consumers() {
    for (const Use& u : cg_.consumers()) {
      const Node& m = graph_.nodes[u.node];
      PruneLayer& ml = layer(m.name);
      const std::vector<int64_t> kept = kept_of(u.input);
      if (u.input.per_channel == 0) {
        ml.kept_inputs = kept;
        cut(m.inputs[1], 1, kept, u.input.channels());
      } else {
        ml.kept_inputs = features_of(kept, u.input.per_channel);
        cut(m.inputs[1], m.attr_int("transB", 0) ? 1 : 0, ml.kept_inputs,
            u.input.channels() * u.input.per_channel);
      }
    }
  }

  // Replaces every cut initializer by its shrunk copy.
  void apply() {
    for (const auto& [name, dims] : cuts_) {
      Tensor t = graph_.initializers.at(name);
      for (const auto& [dim, kept] : dims) t = gather(t, dim, kept);
      graph_.initializers[name] = std::move(t);
    }
  }

 private:
  PruneLayer& layer(const std::string& node) { return r_.layers[ix_.layer_of.at(node)]; }

  std::vector<int64_t> kept_of(const ChannelMap& m) const {
    std::vector<int64_t> kept;
    int64_t offset = 0;
    for (const Segment& s : m.segments) {
      const auto& g = group_kept_[cg_.root(s.group)];
      if (g)
        for (int64_t k : *g) kept.push_back(offset + k);
      else
        for (int64_t k = 0; k < s.width; ++k) kept.push_back(offset + k);
      offset += s.width;
    }
    return kept;
  }

  void cut(const std::string& name, size_t dim, const std::vector<int64_t>& kept, int64_t width) {
    if (!name.empty() && std::ssize(kept) < width) cuts_[name][dim] = kept;
  }

  Graph& graph_;
  const ChannelGraph& cg_;
  const LayerIndex& ix_;
  PruneReport& r_;
  std::vector<std::optional<std::vector<int64_t>>> group_kept_;  // per group; root ids only
  std::map<std::string, std::map<size_t, std::vector<int64_t>>> cuts_;
};

// The report describes the shrunk weights.
void describe_shrunk_layers(const Graph& graph, PruneReport& r) {
  for (PruneLayer& l : r.layers) {
    const Tensor* w = graph.constant(l.weight);
    if (l.kept_outputs.empty()) l.kept_outputs = iota(l.out_channels);
    if (l.kept_inputs.empty()) l.kept_inputs = iota(l.in_channels);
    if (l.note.empty() && !l.pruned)
      l.note = l.op == "Gemm"   ? "not a conv"
               : l.op != "Conv" ? l.op + " (only Conv is channel-pruned)"
                                : "grouped conv (follows no prunable conv)";
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
}

}  // namespace

PruneReport prune_channels(Graph& graph, const PruneSpec& spec) {
  graph.infer();
  PruneReport r;
  r.spec = spec;
  r.params_before = graph.param_count();
  r.macs_before = graph.macs();
  r.layers = find_layers(graph, spec.prune_first, false);
  const LayerIndex ix = index_layers(graph, r);
  const ChannelGraph cg(graph, ix.producer_blocks);
  std::vector<Candidate> candidates = prunable_groups(graph, cg, ix, r);
  select_channels(candidates, spec, r);
  round_kept_up(candidates, spec.channel_multiple, r);
  CutPlan plan(graph, cg, ix, r);
  plan.groups(candidates);
  plan.batch_norms();
  plan.depthwise();
  plan.consumers();
  plan.apply();
  graph.infer();
  describe_shrunk_layers(graph, r);
  tally(graph, r);
  r.params_after = graph.param_count();
  r.macs_after = graph.macs();
  return r;
}

}  // namespace dlas::prune_detail

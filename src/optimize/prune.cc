#include "dlas/optimize/prune.h"
#include "dlas/optimize/quantize.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <set>

#include "dlas/core/error.h"
#include "prune_internal.h"

namespace dlas {

namespace {

std::vector<std::string> split(std::string_view text, char sep) {
  std::vector<std::string> parts;
  size_t start = 0;
  for (;;) {
    const size_t end = text.find(sep, start);
    parts.emplace_back(text.substr(start, end == std::string_view::npos ? end : end - start));
    if (end == std::string_view::npos) return parts;
    start = end + 1;
  }
}

// A decimal number, all of `s` (no sign, no exponent needed but accepted by strtod).
bool parse_number(const std::string& s, double& v) {
  if (s.empty() || s.size() > 32) return false;
  for (char c : s)
    if (!((c >= '0' && c <= '9') || c == '.' || c == 'e' || c == 'E' || c == '-' || c == '+'))
      return false;
  char* end = nullptr;
  v = std::strtod(s.c_str(), &end);
  return end == s.c_str() + s.size() && std::isfinite(v);
}

bool parse_positive_int(const std::string& s, int& v) {
  if (s.empty() || s.size() > 4) return false;
  for (char c : s)
    if (c < '0' || c > '9') return false;
  v = std::stoi(s);
  return v > 0;
}

std::string format_sparsity(double s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6g", s);
  return buf;
}

// Element offset of matrix entry (row, col) of a layer: row = output channel (over all
// groups), col = reduction index.
struct MatrixView {
  int64_t row_stride, col_stride;
  int64_t offset(int64_t row, int64_t col) const { return row * row_stride + col * col_stride; }
};

MatrixView view_of(const PruneLayer& l) {
  if (l.transposed) return {1, l.rows};  // Gemm transB = 0: stored [K][N]
  return {l.cols, 1};
}

bool is_conv_op(const std::string& op) { return op == "Conv" || op == "FusedConv"; }

// Flags the k smallest scores (ties broken by position) in `pruned`.
void mark_smallest(const std::vector<float>& scores, int64_t k, std::vector<uint8_t>& pruned) {
  pruned.assign(scores.size(), 0);
  if (k <= 0) return;
  if (k >= static_cast<int64_t>(scores.size())) {
    std::fill(pruned.begin(), pruned.end(), 1);
    return;
  }
  std::vector<float> sorted = scores;
  std::nth_element(sorted.begin(), sorted.begin() + (k - 1), sorted.end());
  const float threshold = sorted[static_cast<size_t>(k - 1)];
  int64_t count = 0;
  for (size_t i = 0; i < scores.size(); ++i)
    if (scores[i] < threshold) pruned[i] = 1, ++count;
  for (size_t i = 0; i < scores.size() && count < k; ++i)
    if (scores[i] == threshold) pruned[i] = 1, ++count;
}

// One block of a layer: group g, block row br, block column bc.
struct BlockRef {
  int64_t row0, rows, col0, cols;  // matrix rows (over all groups) and columns
};

std::vector<BlockRef> layer_blocks(const PruneLayer& l, SparseBlock b) {
  std::vector<BlockRef> blocks;
  const int64_t kg = l.rows / l.groups;
  for (int64_t g = 0; g < l.groups; ++g)
    for (int64_t r0 = 0; r0 < kg; r0 += b.rows)
      for (int64_t c0 = 0; c0 < l.cols; c0 += b.cols)
        blocks.push_back({g * kg + r0, std::min<int64_t>(b.rows, kg - r0), c0,
                          std::min<int64_t>(b.cols, l.cols - c0)});
  return blocks;
}

// Per layer: scores of its units (elements in storage order, or blocks) for the spec.
std::vector<float> unit_scores(const PruneLayer& l, const float* w, const PruneSpec& spec) {
  std::vector<float> s;
  if (spec.method == PruneMethod::kWeight) {
    s.resize(static_cast<size_t>(l.params));
    for (int64_t i = 0; i < l.params; ++i)
      s[static_cast<size_t>(i)] = std::isnan(w[i]) ? INFINITY : std::fabs(w[i]);  // NaN: kept
    return s;
  }
  const MatrixView v = view_of(l);
  for (const BlockRef& b : layer_blocks(l, spec.block)) {
    double sum = 0;  // accumulated in double, compared as float
    for (int64_t r = b.row0; r < b.row0 + b.rows; ++r)
      for (int64_t c = b.col0; c < b.col0 + b.cols; ++c) sum += std::fabs(w[v.offset(r, c)]);
    s.push_back(static_cast<float>(sum));
  }
  return s;
}

// Turns per-unit pruned flags into the layer's element mask (1 = kept).
std::vector<uint8_t> element_mask(const PruneLayer& l, const PruneSpec& spec,
                                  const uint8_t* unit_pruned) {
  std::vector<uint8_t> mask(static_cast<size_t>(l.params), 1);
  if (spec.method == PruneMethod::kWeight) {
    for (int64_t i = 0; i < l.params; ++i) mask[static_cast<size_t>(i)] = !unit_pruned[i];
    return mask;
  }
  const MatrixView v = view_of(l);
  const std::vector<BlockRef> blocks = layer_blocks(l, spec.block);
  for (size_t i = 0; i < blocks.size(); ++i) {
    if (!unit_pruned[i]) continue;
    const BlockRef& b = blocks[i];
    for (int64_t r = b.row0; r < b.row0 + b.rows; ++r)
      for (int64_t c = b.col0; c < b.col0 + b.cols; ++c)
        mask[static_cast<size_t>(v.offset(r, c))] = 0;
  }
  return mask;
}

int64_t count_zeros(const float* w, int64_t n) {
  int64_t z = 0;
  for (int64_t i = 0; i < n; ++i) z += w[i] == 0.f;
  return z;
}

// Replaces the weight by a copy with the masked elements zeroed.
void apply_mask(Graph& g, const PruneLayer& l) {
  Tensor w = g.initializers.at(l.weight).clone();
  float* p = w.data<float>();
  for (int64_t i = 0; i < l.params; ++i)
    if (!l.mask[static_cast<size_t>(i)]) p[i] = 0.f;
  g.initializers[l.weight] = std::move(w);
}

}  // namespace

namespace prune_detail {

std::vector<PruneLayer> find_layers(const Graph& g, bool prune_first, bool prune_classifier) {
  std::vector<PruneLayer> layers;
  std::set<std::string> seen;
  for (const Node& n : g.nodes) {
    if (!is_conv_op(n.op) && n.op != "Gemm") continue;
    if (n.inputs.size() < 2) continue;
    const Tensor* w = g.constant(n.inputs[1]);
    if (!w || w->dtype() != DType::kF32 || w->rank() < 2 || w->numel() == 0) continue;
    if (!seen.insert(n.inputs[1]).second) continue;
    PruneLayer l;
    l.node = n.name;
    l.op = n.op;
    l.weight = n.inputs[1];
    l.shape = w->shape();
    l.params = w->numel();
    if (n.op == "Gemm") {
      DLAS_CHECK(w->rank() == 2, ErrorKind::kInvalidInput, n.label(), ": weight ", w->describe(),
                 " is not a matrix");
      const bool trans_b = n.attr_int("transB", 0) != 0;
      l.rows = trans_b ? w->dim(0) : w->dim(1);
      l.cols = trans_b ? w->dim(1) : w->dim(0);
      l.transposed = !trans_b;
    } else {
      l.rows = w->dim(0);
      l.cols = w->numel() / l.rows;
      l.groups = n.attr_int("group", 1);
      DLAS_CHECK(l.groups >= 1 && l.rows % l.groups == 0, ErrorKind::kInvalidInput, n.label(), ": ",
                 l.rows, " output channels do not split into ", l.groups, " groups");
    }
    l.pruned = true;
    layers.push_back(std::move(l));
  }
  if (!prune_first)
    for (PruneLayer& l : layers)
      if (is_conv_op(l.op)) {
        l.pruned = false;
        break;
      }
  if (!prune_classifier && !layers.empty()) layers.back().pruned = false;
  return layers;
}

int64_t target_count(double sparsity, int64_t n) {
  return std::min<int64_t>(n, std::llround(sparsity * static_cast<double>(n)));
}

void tally(const Graph& g, PruneReport& r) {
  r.prunable_params = r.prunable_zeros = r.total_params = r.total_zeros = 0;
  for (PruneLayer& l : r.layers) {
    l.zeros = count_zeros(g.constant(l.weight)->data<float>(), l.params);
    r.total_params += l.params;
    r.total_zeros += l.zeros;
    if (l.pruned) {
      r.prunable_params += l.params;
      r.prunable_zeros += l.zeros;
    }
  }
}

}  // namespace prune_detail

using prune_detail::find_layers;
using prune_detail::tally;
using prune_detail::target_count;

std::string PruneSpec::str() const {
  std::string s;
  switch (method) {
    case PruneMethod::kWeight:
      s = "wp:";
      break;
    case PruneMethod::kChannel:
      s = "cp:";
      break;
    case PruneMethod::kBlock:
      s = "bp:" + std::to_string(block.rows) + "x" + std::to_string(block.cols) + ":";
      break;
  }
  s += format_sparsity(sparsity);
  if (scope == PruneScope::kLayer) s += ":layer";
  if (method == PruneMethod::kChannel && channel_multiple > 1)
    s += ":round" + std::to_string(channel_multiple);
  return s;
}

PruneSpec parse_prune_spec(std::string_view text) {
  const std::string t(text);
  std::vector<std::string> parts = split(text, ':');
  PruneSpec spec;
  const std::string& kind = parts[0];
  size_t next = 1;
  if (kind == "wp") {
    spec.method = PruneMethod::kWeight;
  } else if (kind == "bp") {
    spec.method = PruneMethod::kBlock;
    DLAS_CHECK(parts.size() >= 3, ErrorKind::kInvalidInput, t,
               ": block pruning is bp:BxC:S (e.g. bp:4x1:0.9)");
    const std::vector<std::string> dims = split(parts[1], 'x');
    DLAS_CHECK(dims.size() == 2 && parse_positive_int(dims[0], spec.block.rows) &&
                   parse_positive_int(dims[1], spec.block.cols),
               ErrorKind::kInvalidInput, t, ": block '", parts[1],
               "' is not BxC with positive B and C (e.g. 4x1)");
    next = 2;
  } else if (kind == "cp") {
    spec.method = PruneMethod::kChannel;
  } else {
    fail(ErrorKind::kInvalidInput, t, ": unknown pruning method '", kind,
         "' (wp:S, bp:BxC:S or cp:S)");
  }
  DLAS_CHECK(parts.size() > next, ErrorKind::kInvalidInput, t, ": sparsity missing (e.g. ",
             kind == "bp" ? "bp:4x1:0.9" : kind + ":0.9", ")");
  double s = 0;
  DLAS_CHECK(parse_number(parts[next], s), ErrorKind::kInvalidInput, t, ": sparsity '", parts[next],
             "' is not a number");
  DLAS_CHECK(s >= 0 && s < 1, ErrorKind::kInvalidInput, t, ": sparsity must be in [0, 1)");
  spec.sparsity = s;
  const size_t after_sparsity = ++next;
  if (parts.size() > next && (parts[next] == "global" || parts[next] == "layer")) {
    spec.scope = parts[next] == "layer" ? PruneScope::kLayer : PruneScope::kGlobal;
    ++next;
  }
  if (parts.size() > next && kind == "cp" && parts[next].rfind("round", 0) == 0) {
    int m = 0;
    DLAS_CHECK(parse_positive_int(parts[next].substr(5), m), ErrorKind::kInvalidInput, t, ": '",
               parts[next], "' is not roundN with a positive N (e.g. round8)");
    spec.channel_multiple = m;
    ++next;
  }
  if (parts.size() > next) {
    DLAS_CHECK(next != after_sparsity, ErrorKind::kInvalidInput, t, ": scope '", parts[next],
               "' is not global or layer", kind == "cp" ? " (nor roundN)" : "");
    fail(ErrorKind::kInvalidInput, t, ": unexpected '", parts[next], "' after the ",
         parts[next - 1].rfind("round", 0) == 0 ? "rounding" : "scope");
  }
  return spec;
}

std::optional<PruneSpec> parse_compress_spec(std::string_view text) {
  // The whole syntax (pruning and quantization parts) lives in parse_compress; callers that
  // only prune read its pruning part.
  return parse_compress(text).prune;
}

PruneReport describe_weights(const Graph& graph, bool prune_first, bool prune_classifier) {
  PruneReport r;
  r.spec.prune_first = prune_first;
  r.spec.prune_classifier = prune_classifier;
  r.layers = find_layers(graph, prune_first, prune_classifier);
  tally(graph, r);
  return r;
}

PruneReport prune(Graph& graph, const PruneSpec& spec) {
  DLAS_CHECK(spec.sparsity >= 0 && spec.sparsity < 1, ErrorKind::kInvalidInput, spec.str(),
             ": sparsity must be in [0, 1)");
  if (spec.method == PruneMethod::kChannel) return prune_detail::prune_channels(graph, spec);
  DLAS_CHECK(spec.method != PruneMethod::kBlock || (spec.block.rows > 0 && spec.block.cols > 0),
             ErrorKind::kInvalidInput, spec.str(), ": block sides must be positive");
  PruneReport r;
  r.spec = spec;
  r.layers = find_layers(graph, spec.prune_first, spec.prune_classifier);

  // Scores of every pruned layer's units, concatenated (global) or one layer at a time.
  std::vector<std::vector<float>> scores(r.layers.size());
  for (size_t i = 0; i < r.layers.size(); ++i)
    if (r.layers[i].pruned)
      scores[i] = unit_scores(r.layers[i], graph.constant(r.layers[i].weight)->data<float>(), spec);

  std::vector<std::vector<uint8_t>> unit_pruned(r.layers.size());
  if (spec.scope == PruneScope::kLayer) {
    for (size_t i = 0; i < r.layers.size(); ++i)
      if (r.layers[i].pruned)
        mark_smallest(scores[i], target_count(spec.sparsity, std::ssize(scores[i])),
                      unit_pruned[i]);
  } else {
    std::vector<float> all;
    std::vector<size_t> sizes(r.layers.size());
    for (size_t i = 0; i < r.layers.size(); ++i) {
      sizes[i] = scores[i].size();
      all.insert(all.end(), scores[i].begin(), scores[i].end());
      std::vector<float>().swap(scores[i]);
    }
    std::vector<uint8_t> flags;
    mark_smallest(all, target_count(spec.sparsity, std::ssize(all)), flags);
    size_t at = 0;
    for (size_t i = 0; i < r.layers.size(); ++i) {
      unit_pruned[i].assign(flags.begin() + static_cast<std::ptrdiff_t>(at),
                            flags.begin() + static_cast<std::ptrdiff_t>(at + sizes[i]));
      at += sizes[i];
    }
  }
  for (size_t i = 0; i < r.layers.size(); ++i) {
    PruneLayer& l = r.layers[i];
    if (!l.pruned) continue;
    l.mask = element_mask(l, spec, unit_pruned[i].data());
    apply_mask(graph, l);
  }
  tally(graph, r);
  return r;
}

void apply_prune_masks(Graph& graph, const PruneReport& report) {
  for (const PruneLayer& l : report.layers) {
    if (l.mask.empty()) continue;
    const Tensor* w = graph.constant(l.weight);
    DLAS_CHECK(w, ErrorKind::kInvalidInput, "pruning mask: weight '", l.weight,
               "' is not in the graph");
    DLAS_CHECK(
        w->dtype() == DType::kF32 && w->shape() == l.shape && std::ssize(l.mask) == w->numel(),
        ErrorKind::kInvalidInput, "pruning mask: weight '", l.weight, "' is ", w->describe(),
        ", the mask was made for f32", shape_str(l.shape));
    apply_mask(graph, l);
  }
}

std::vector<float> layer_matrix(const Graph& graph, const PruneLayer& l, int64_t group) {
  const Tensor* t = graph.constant(l.weight);
  DLAS_CHECK(t && t->numel() == l.params, ErrorKind::kInvalidInput, "weight '", l.weight,
             "' is missing or changed");
  const float* w = t->data<float>();
  const MatrixView v = view_of(l);
  const int64_t kg = l.rows / l.groups;
  std::vector<float> m(static_cast<size_t>(kg * l.cols));
  for (int64_t r = 0; r < kg; ++r)
    for (int64_t c = 0; c < l.cols; ++c)
      m[static_cast<size_t>(r * l.cols + c)] = w[v.offset(group * kg + r, c)];
  return m;
}

size_t layer_sparse_bytes(const Graph& graph, const PruneLayer& l, SparseBlock block) {
  size_t bytes = 0;
  for (int64_t g = 0; g < l.groups; ++g) {
    const std::vector<float> m = layer_matrix(graph, l, g);
    bytes += encode_sparse(m.data(), l.rows / l.groups, l.cols, block).bytes();
  }
  return bytes;
}

}  // namespace dlas

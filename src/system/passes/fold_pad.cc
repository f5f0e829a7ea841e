// Folds an explicit zero Pad of the spatial axes into the Conv or AveragePool that reads it:
// exporters write avg_pool2d(padding=1) as Pad then an unpadded AveragePool (Inception-v3's
// branches), and some models pad before a conv. The consumer then pads itself (no copy of
// the activation); an AveragePool counts the padding, as it averaged the padded zeros.
#include <cmath>

#include "dlas/system/passes.h"
#include "system/passes/pass_util.h"

namespace dlas {
namespace {

// The Pad's H and W pads as [top, left, bottom, right] when it pads a 4-D value by a
// constant zero on those axes only, by non-negative amounts; false otherwise.
bool spatial_zero_pad(const Graph& g, const Node& n, std::vector<int64_t>& hw) {
  if (n.op != "Pad" || n.inputs.size() < 2 || n.outputs.size() != 1 ||
      n.attr_string("mode", "constant") != "constant" || !g.has_value(n.inputs[0]) ||
      g.value(n.inputs[0]).shape.size() != 4)
    return false;
  if (n.inputs.size() > 3 && !n.inputs[3].empty()) return false;  // axes
  const Tensor* pads = g.constant(n.inputs[1]);
  if (!pads || pads->numel() != 8) return false;
  const std::vector<int64_t> p = pads->to_int64_vector();
  if (p[0] || p[1] || p[4] || p[5]) return false;
  for (int64_t v : p)
    if (v < 0) return false;
  if (n.inputs.size() > 2 && !n.inputs[2].empty()) {
    const Tensor* v = g.constant(n.inputs[2]);
    if (!v || v->numel() != 1 || !is_float(v->dtype()) ||
        v->cast(DType::kF32).data<float>()[0] != 0.f)
      return false;
  }
  hw = {p[2], p[3], p[6], p[7]};
  return true;
}

// Whether consumer c can take the padding itself.
bool takes_padding(const Node& c) {
  if (c.attr_string("auto_pad", "NOTSET") != "NOTSET") return false;
  if (passes::is_conv(c)) return true;
  if (c.op != "AveragePool" || c.attr_int("ceil_mode", 0) != 0) return false;
  if (c.attr_int("count_include_pad", 0) != 0) return true;
  for (int64_t v : c.attr_ints("pads", {0, 0, 0, 0}))
    if (v != 0) return false;
  return true;
}

}  // namespace

int fold_pad(Graph& graph) {
  const auto uses = passes::use_counts(graph);
  std::unordered_map<std::string, size_t> reader;  // value -> the node reading it as input 0
  for (size_t i = 0; i < graph.nodes.size(); ++i)
    if (!graph.nodes[i].inputs.empty()) reader[graph.nodes[i].inputs[0]] = i;
  std::vector<bool> dead(graph.nodes.size(), false);
  int folded = 0;
  for (size_t i = 0; i < graph.nodes.size(); ++i) {
    const Node& pad = graph.nodes[i];
    std::vector<int64_t> hw;
    if (!spatial_zero_pad(graph, pad, hw)) continue;
    const std::string& y = pad.outputs[0];
    auto it = reader.find(y);
    if (it == reader.end() || uses.at(y) != 1) continue;
    Node& c = graph.nodes[it->second];
    if (!takes_padding(c)) continue;
    std::vector<int64_t> pads = c.attr_ints("pads", {0, 0, 0, 0});
    if (pads.size() != 4) continue;
    for (size_t k = 0; k < 4; ++k) pads[k] += hw[k];
    c.attrs["pads"] = pads;
    if (c.op == "AveragePool") c.attrs["count_include_pad"] = int64_t{1};
    c.inputs[0] = pad.inputs[0];
    dead[i] = true;
    ++folded;
  }
  if (!folded) return 0;
  passes::erase_nodes(graph, dead);
  graph.infer();
  return folded;
}

}  // namespace dlas

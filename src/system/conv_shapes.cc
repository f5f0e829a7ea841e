#include "dlas/system/conv_shapes.h"

#include <charconv>
#include <map>

#include "dlas/core/error.h"
#include "dlas/model/zoo.h"

namespace dlas {

std::optional<ConvProblem> conv_problem_of(const Graph& g, const Node& n) {
  if (n.op != "Conv" && n.op != "FusedConv") return std::nullopt;
  if (n.inputs.size() < 2 || !g.has_value(n.inputs[0])) return std::nullopt;
  if (n.attr_string("auto_pad", "NOTSET") != "NOTSET") return std::nullopt;
  const ValueInfo& x = g.value(n.inputs[0]);
  const Tensor* w = g.constant(n.inputs[1]);
  if (x.shape.size() != 4 || !w || w->rank() != 4) return std::nullopt;
  ConvProblem p;
  p.n = x.shape[0], p.c = x.shape[1], p.h = x.shape[2], p.w = x.shape[3];
  p.k = w->dim(0), p.kh = w->dim(2), p.kw = w->dim(3);
  const auto strides = n.attr_ints("strides", {1, 1});
  const auto dil = n.attr_ints("dilations", {1, 1});
  const auto pads = n.attr_ints("pads", {0, 0, 0, 0});
  p.stride_h = strides[0], p.stride_w = strides[1];
  p.dil_h = dil[0], p.dil_w = dil[1];
  p.pad_t = pads[0], p.pad_l = pads[1], p.pad_b = pads[2], p.pad_r = pads[3];
  p.groups = n.attr_int("group", 1);
  p.has_bias = n.inputs.size() > 2 && !n.inputs[2].empty();
  p.epilogue.act = parse_activation(n.attr_string("activation", "none"));
  const auto params = n.attr_floats("activation_params", {});
  if (params.size() == 2) p.epilogue.p0 = params[0], p.epilogue.p1 = params[1];
  p.epilogue.residual = n.inputs.size() > 3 && !n.inputs[3].empty();
  p.validate();
  return p;
}

std::vector<ConvLayer> conv_layers(const Graph& g) {
  std::vector<ConvLayer> out;
  for (const Node& n : g.nodes)
    if (auto p = conv_problem_of(g, n)) out.push_back({n.name, *p});
  return out;
}

std::vector<ConvShape> unique_conv_shapes(const std::vector<ConvLayer>& layers) {
  std::vector<ConvShape> out;
  std::map<std::string, size_t> index;
  for (const ConvLayer& l : layers) {
    const std::string key = l.problem.key();
    auto [it, added] = index.emplace(key, out.size());
    if (added) {
      out.push_back({ConvProblem::from_key(key), l.node, 1});
    } else {
      ++out[it->second].count;
    }
  }
  return out;
}

std::string format_conv_shape_list(const std::vector<ConvShape>& shapes,
                                   const std::vector<std::string>& header) {
  std::string s;
  for (const std::string& h : header) s += "# " + h + "\n";
  for (const ConvShape& c : shapes) {
    s += c.problem.key();
    if (!c.node.empty()) s += "  # " + c.node + " x" + std::to_string(c.count);
    s += "\n";
  }
  return s;
}

namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t' || s.front() == '\r'))
    s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r'))
    s.remove_suffix(1);
  return s;
}

}  // namespace

std::vector<ConvShape> parse_conv_shape_list(std::string_view text) {
  std::vector<ConvShape> out;
  int line_no = 0;
  while (!text.empty()) {
    const size_t eol = text.find('\n');
    std::string_view line = text.substr(0, eol);
    text.remove_prefix(eol == std::string_view::npos ? text.size() : eol + 1);
    ++line_no;
    line = trim(line);
    if (line.empty() || line.front() == '#') continue;
    ConvShape shape;
    std::string_view key = line, comment;
    if (const size_t hash = line.find('#'); hash != std::string_view::npos) {
      key = trim(line.substr(0, hash));
      comment = trim(line.substr(hash + 1));
    }
    try {
      shape.problem = ConvProblem::from_key(key);
    } catch (const Error& e) {
      fail(ErrorKind::kInvalidInput, "shape list line ", line_no, ": ", e.what());
    }
    if (!comment.empty()) {
      // "<node> x<count>": the count is optional.
      const size_t sp = comment.rfind(" x");
      int64_t count = 0;
      const char* first = comment.data() + sp + 2;
      const char* last = comment.data() + comment.size();
      if (sp != std::string_view::npos && std::from_chars(first, last, count).ptr == last &&
          count > 0) {
        shape.node = std::string(trim(comment.substr(0, sp)));
        shape.count = count;
      } else {
        shape.node = std::string(comment);
      }
    }
    out.push_back(std::move(shape));
  }
  return out;
}

std::string zoo_conv_shape_list(std::string_view model) {
  const ZooEntry* entry = find_zoo_model(model);
  DLAS_CHECK(entry, ErrorKind::kInvalidInput, "unknown zoo model '", model, "'");
  const std::vector<ConvLayer> layers = conv_layers(build_zoo_model(model));
  const std::vector<ConvShape> shapes = unique_conv_shapes(layers);
  int64_t macs = 0;
  for (const ConvLayer& l : layers) macs += l.problem.macs();
  const std::string size = std::to_string(entry->image_size);
  return format_conv_shape_list(
      shapes, {entry->name + ": conv layer shapes, batch 1, " + std::to_string(entry->in_channels) +
                   "x" + size + "x" + size + " input",
               std::to_string(layers.size()) + " conv layers, " + std::to_string(shapes.size()) +
                   " unique shapes, " + std::to_string(macs) + " conv MACs",
               "Generated by build/dlas_gen_shapes; tests/system/bench_shapes_test.cc checks it."});
}

}  // namespace dlas

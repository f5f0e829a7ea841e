#include "dlas/system/conv_shapes.h"

#include <charconv>
#include <map>

#include "dlas/core/error.h"
#include "dlas/model/zoo.h"
#include "system/reference/quant_kernels.h"

namespace dlas {

ConvProblem conv_geometry(const Node& n, const Shape& x, const Shape& w) {
  ConvProblem p;
  p.n = x[0], p.c = x[1], p.h = x[2], p.w = x[3];
  p.k = w[0], p.kh = w[2], p.kw = w[3];
  const auto strides = n.attr_ints("strides", {1, 1});
  const auto dil = n.attr_ints("dilations", {1, 1});
  const auto pads = n.attr_ints("pads", {0, 0, 0, 0});
  p.stride_h = strides[0], p.stride_w = strides[1];
  p.dil_h = dil[0], p.dil_w = dil[1];
  p.pad_t = pads[0], p.pad_l = pads[1], p.pad_b = pads[2], p.pad_r = pads[3];
  p.groups = n.attr_int("group", 1);
  p.epilogue = epilogue_from_attrs(n.attr_string("activation", "none"),
                                   n.attr_floats("activation_params", {}));
  return p;
}

std::optional<ConvProblem> conv_problem_of(const Graph& g, const Node& n) {
  if (n.op != "Conv" && n.op != "FusedConv") return std::nullopt;
  if (n.inputs.size() < 2 || !g.has_value(n.inputs[0])) return std::nullopt;
  if (n.attr_string("auto_pad", "NOTSET") != "NOTSET") return std::nullopt;
  const ValueInfo& x = g.value(n.inputs[0]);
  const Tensor* w = g.constant(n.inputs[1]);
  if (x.shape.size() != 4 || !w || w->rank() != 4) return std::nullopt;
  ConvProblem p = conv_geometry(n, x.shape, w->shape());
  p.has_bias = n.inputs.size() > 2 && !n.inputs[2].empty();
  p.epilogue.residual = n.inputs.size() > 3 && !n.inputs[3].empty();
  if (x.dtype == DType::kF16 || x.dtype == DType::kBF16) p.set_half(x.dtype);
  p.validate();
  return p;
}

ConvWeights ConvNode::weights() const {
  switch (problem.types()) {
    case ConvTypes::kInt8:
      return ConvWeights::int8(w->data<int8_t>(), w_scale.data(), b ? b->data<int32_t>() : nullptr);
    case ConvTypes::kHalf:
      return ConvWeights::half(static_cast<const uint16_t*>(w->raw()),
                               b ? bias_f32.data() : nullptr);
    case ConvTypes::kF32:
      break;
  }
  return ConvWeights::f32(w->data<float>(), b ? b->data<float>() : nullptr);
}

double ConvNode::density() const {
  if (problem.types() != ConvTypes::kF32 || w->numel() == 0) return 1.0;
  const float* v = w->data<float>();
  int64_t nonzero = 0;
  for (int64_t i = 0; i < w->numel(); ++i) nonzero += v[i] != 0.f;
  return static_cast<double>(nonzero) / static_cast<double>(w->numel());
}

namespace {

// A QFusedConv (int8, made by fuse_quantized_conv) with s8 weights and an s32 bias.
std::optional<ConvNode> int8_conv_node(const Graph& g, const Node& n) {
  ConvNode c;
  c.w = g.constant(n.inputs[1]);
  const bool has_bias = n.inputs.size() > 2 && !n.inputs[2].empty();
  const bool has_res = n.inputs.size() > 3 && !n.inputs[3].empty();
  c.b = has_bias ? g.constant(n.inputs[2]) : nullptr;
  if (!c.w || c.w->dtype() != DType::kS8 || (has_bias && (!c.b || c.b->dtype() != DType::kS32)))
    return std::nullopt;
  c.problem = reference::qfused_conv_problem(
      n, g.value(n.inputs[0]).shape, c.w->shape(), g.value(n.inputs[0]).dtype, has_bias,
      has_res ? g.value(n.inputs[3]).dtype : DType::kU8, has_res);
  c.w_scale = reference::qfused_conv_w_scales(n, c.problem.k);
  return c;
}

}  // namespace

std::optional<ConvNode> conv_node_of(const Graph& g, const Node& n) {
  if (n.op == "QFusedConv") return int8_conv_node(g, n);
  std::optional<ConvProblem> p = conv_problem_of(g, n);
  if (!p) return std::nullopt;
  ConvNode c;
  c.problem = *p;
  c.w = g.constant(n.inputs[1]);
  c.b = p->has_bias ? g.constant(n.inputs[2]) : nullptr;
  const DType x = g.value(n.inputs[0]).dtype;
  if (x != DType::kF32 && !p->is_half()) return std::nullopt;
  if (c.w->dtype() != x || (p->has_bias && !c.b)) return std::nullopt;
  if (p->is_half()) {
    for (int64_t i = 0; c.b && i < c.b->numel(); ++i)
      c.bias_f32.push_back(static_cast<float>(c.b->get_as_double(i)));
  } else if (c.b && c.b->dtype() != DType::kF32) {
    return std::nullopt;
  }
  return c;
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

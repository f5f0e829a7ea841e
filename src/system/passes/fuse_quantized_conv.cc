// QDQ / QLinearConv patterns -> QFusedConv (dlas/system/passes.h), and the DQ -> MaxPool -> Q
// shortcut. The int8 arithmetic of QFusedConv is include/dlas/algo/qconv.h's.
#include <cmath>
#include <optional>

#include "dlas/system/passes.h"
#include "system/passes/pass_util.h"
#include "system/passes/quant_pattern.h"
#include "system/reference/quant_kernels.h"

namespace dlas {
namespace {

using passes::Dq;
using passes::dq_activation;
using passes::dq_weights;
using passes::per_tensor;

// The bias as s32 at x_scale * w_scale[k]: a DequantizeLinear of constant s32 (or an f32
// constant), re-expressed at that scale (exact when it already is, as dlas quantize writes it).
std::optional<Tensor> int_bias(const Graph& g, const std::unordered_map<std::string, size_t>& prod,
                               const std::string& value, float x_scale,
                               const std::vector<float>& ws) {
  const int64_t k = static_cast<int64_t>(ws.size());
  std::vector<double> real(static_cast<size_t>(k));
  if (const Tensor* c = g.constant(value)) {
    if (c->dtype() != DType::kF32 || c->numel() != k) return std::nullopt;
    for (int64_t i = 0; i < k; ++i) real[i] = c->data<float>()[i];
  } else {
    auto it = prod.find(value);
    if (it == prod.end()) return std::nullopt;
    const Node& n = g.nodes[it->second];
    if (n.op != "DequantizeLinear") return std::nullopt;
    const Tensor* q = g.constant(n.inputs[0]);
    const Tensor* s = g.constant(n.inputs[1]);
    const Tensor* z =
        n.inputs.size() > 2 && !n.inputs[2].empty() ? g.constant(n.inputs[2]) : nullptr;
    if (!q || !s || q->numel() != k || (s->numel() != 1 && s->numel() != k) ||
        (n.inputs.size() > 2 && !n.inputs[2].empty() && !z))
      return std::nullopt;
    for (int64_t i = 0; i < k; ++i) {
      const int64_t zp = z ? z->get_as_int64(z->numel() == 1 ? 0 : i) : 0;
      const double sc = s->get_as_double(s->numel() == 1 ? 0 : i);
      // Already at x_scale * w_scale (to float precision): keep the integers.
      const double want =
          static_cast<double>(static_cast<float>(static_cast<double>(x_scale) * ws[i]));
      if (zp == 0 && std::abs(sc - want) <= 1e-6 * want) {
        real[i] = std::nan("");  // marker: copy the integer
      } else {
        real[i] = static_cast<double>(q->get_as_int64(i) - zp) * sc;
      }
    }
    Tensor b(DType::kS32, {k});
    for (int64_t i = 0; i < k; ++i) {
      const double v = std::isnan(real[i])
                           ? static_cast<double>(q->get_as_int64(i))
                           : std::nearbyint(real[i] / (static_cast<double>(x_scale) * ws[i]));
      if (std::abs(v) > 1073741823.0) return std::nullopt;  // qconv.h leaves 2^30 for the bias
      b.data<int32_t>()[i] = static_cast<int32_t>(v);
    }
    return b;
  }
  Tensor b(DType::kS32, {k});
  for (int64_t i = 0; i < k; ++i) {
    const double v = std::nearbyint(real[i] / (static_cast<double>(x_scale) * ws[i]));
    if (std::abs(v) > 1073741823.0) return std::nullopt;
    b.data<int32_t>()[i] = static_cast<int32_t>(v);
  }
  return b;
}

void copy_conv_attrs(const Node& from, Node& to) {
  for (const char* a : {"strides", "pads", "dilations", "group", "kernel_shape", "auto_pad",
                        "activation", "activation_params"})
    if (from.has_attr(a)) to.attrs[a] = from.attrs.at(a);
}

void set_quant_attrs(Node& n, const QuantParams& x, const std::vector<float>& ws,
                     const QuantParams& y) {
  n.attrs["x_scale"] = x.scale;
  n.attrs["x_zero_point"] = static_cast<int64_t>(x.zero_point);
  n.attrs["w_scale"] = ws;
  n.attrs["y_scale"] = y.scale;
  n.attrs["y_zero_point"] = static_cast<int64_t>(y.zero_point);
  n.attrs["y_type"] = std::string(dtype_name(y.type));
}

// The fused node must be a valid int8 problem (reduction short enough, clamp activation).
bool valid_qfused(const Graph& g, const Node& n) {
  try {
    const bool has_bias = n.inputs.size() > 2 && !n.inputs[2].empty();
    const bool has_res = n.inputs.size() > 3 && !n.inputs[3].empty();
    const Tensor* w = g.constant(n.inputs[1]);
    reference::qfused_conv_problem(n, g.value(n.inputs[0]).shape, w->shape(),
                                   g.value(n.inputs[0]).dtype, has_bias,
                                   has_res ? g.value(n.inputs[3]).dtype : DType::kU8, has_res);
    return true;
  } catch (const Error&) {
    return false;
  }
}

}  // namespace

int fuse_quantized_conv(Graph& graph) {
  Graph& g = graph;
  auto uses = passes::use_counts(g);
  auto prod = passes::producers(g);
  std::unordered_map<std::string, std::vector<size_t>> consumers;
  for (size_t i = 0; i < g.nodes.size(); ++i)
    for (const std::string& in : g.nodes[i].inputs)
      if (!in.empty()) consumers[in].push_back(i);
  std::vector<bool> dead(g.nodes.size(), false);
  std::vector<std::pair<size_t, Node>> replace;
  int fused = 0;
  for (size_t ci = 0; ci < g.nodes.size(); ++ci) {
    const Node& conv = g.nodes[ci];
    Node q;
    q.name = conv.name;
    q.op = "QFusedConv";
    if (passes::is_conv(conv)) {
      const std::string act = conv.attr_string("activation", "none");
      if (act != "none" && act != "relu" && act != "clip") continue;
      if (conv.attr_string("auto_pad", "NOTSET") != "NOTSET") continue;
      if (g.value(conv.inputs[0]).shape.size() != 4) continue;
      const auto x = dq_activation(g, prod, conv.inputs[0]);
      std::string wq;
      std::vector<float> ws;
      if (!x || !dq_weights(g, prod, conv.inputs[1], 4, 0, wq, ws)) continue;
      std::optional<Tensor> bias;
      if (conv.inputs.size() > 2 && !conv.inputs[2].empty()) {
        bias = int_bias(g, prod, conv.inputs[2], x->p.scale, ws);
        if (!bias) continue;
      }
      std::optional<Dq> r;
      if (conv.inputs.size() > 3 && !conv.inputs[3].empty()) {
        r = dq_activation(g, prod, conv.inputs[3]);
        if (!r) continue;
      }
      // The output: read by exactly one per-tensor QuantizeLinear.
      const std::string& y = conv.outputs[0];
      if (uses[y] != 1 || consumers[y].size() != 1) continue;
      const size_t qi = consumers[y][0];
      const Node& qn = g.nodes[qi];
      if (qn.op != "QuantizeLinear" || qn.inputs[0] != y || dead[qi]) continue;
      const DType yt =
          qn.inputs.size() > 2 && !qn.inputs[2].empty() ? g.value(qn.inputs[2]).dtype : DType::kU8;
      const auto yp = per_tensor(g, qn, yt);
      if (!yp) continue;
      copy_conv_attrs(conv, q);
      set_quant_attrs(q, x->p, ws, *yp);
      q.inputs = {x->q, wq, "", ""};
      if (bias) {
        q.inputs[2] = g.unique_value_name(conv.name + ".bias_s32");
        g.initializers[q.inputs[2]] = *bias;
        g.set_value({q.inputs[2], DType::kS32, bias->shape()});
      }
      if (r) {
        q.inputs[3] = r->q;
        q.attrs["r_scale"] = r->p.scale;
        q.attrs["r_zero_point"] = static_cast<int64_t>(r->p.zero_point);
      }
      while (!q.inputs.empty() && q.inputs.back().empty()) q.inputs.pop_back();
      q.outputs = {qn.outputs[0]};
      if (!valid_qfused(g, q)) continue;
      dead[qi] = true;
    } else if (conv.op == "QLinearConv") {
      // Constant per-tensor x / y parameters, constant s8 weights with zero points 0.
      if (conv.attr_string("auto_pad", "NOTSET") != "NOTSET") continue;
      const Tensor *xs = g.constant(conv.inputs[1]), *xz = g.constant(conv.inputs[2]),
                   *w = g.constant(conv.inputs[3]), *wsc = g.constant(conv.inputs[4]),
                   *wz = g.constant(conv.inputs[5]), *ys = g.constant(conv.inputs[6]),
                   *yz = g.constant(conv.inputs[7]);
      if (!xs || !xz || !w || !wsc || !wz || !ys || !yz || w->dtype() != DType::kS8 ||
          w->rank() != 4)
        continue;
      bool zero = true;
      for (int64_t i = 0; i < wz->numel(); ++i) zero &= wz->get_as_int64(i) == 0;
      if (!zero) continue;
      const QuantParams xp{static_cast<float>(xs->get_as_double(0)),
                           static_cast<int32_t>(xz->get_as_int64(0)),
                           g.value(conv.inputs[0]).dtype};
      const QuantParams yp{static_cast<float>(ys->get_as_double(0)),
                           static_cast<int32_t>(yz->get_as_int64(0)), yz->dtype()};
      std::vector<float> wsv(static_cast<size_t>(w->dim(0)));
      for (int64_t i = 0; i < w->dim(0); ++i)
        wsv[i] = static_cast<float>(wsc->get_as_double(wsc->numel() == 1 ? 0 : i));
      if (conv.inputs.size() > 8 && !conv.inputs[8].empty() && !g.constant(conv.inputs[8]))
        continue;
      copy_conv_attrs(conv, q);
      set_quant_attrs(q, xp, wsv, yp);
      q.inputs = {conv.inputs[0], conv.inputs[3]};
      if (conv.inputs.size() > 8 && !conv.inputs[8].empty()) q.inputs.push_back(conv.inputs[8]);
      q.outputs = conv.outputs;
      if (!valid_qfused(g, q)) continue;
    } else {
      continue;
    }
    replace.emplace_back(ci, std::move(q));
    ++fused;
  }
  for (auto& [i, n] : replace) g.nodes[i] = std::move(n);

  // DQ -> MaxPool -> Q with equal parameters: the MaxPool on the 8-bit values.
  prod = passes::producers(g);
  uses = passes::use_counts(g);
  consumers.clear();
  for (size_t i = 0; i < g.nodes.size(); ++i)
    for (const std::string& in : g.nodes[i].inputs)
      if (!in.empty()) consumers[in].push_back(i);
  for (size_t mi = 0; mi < g.nodes.size(); ++mi) {
    Node& mp = g.nodes[mi];
    if (mp.op != "MaxPool" || mp.outputs.size() != 1 || dead[mi]) continue;
    const auto x = dq_activation(g, prod, mp.inputs[0]);
    const std::string& y = mp.outputs[0];
    if (!x || uses[y] != 1 || consumers[y].size() != 1) continue;
    const size_t qi = consumers[y][0];
    const Node& qn = g.nodes[qi];
    if (qn.op != "QuantizeLinear" || dead[qi]) continue;
    const DType yt =
        qn.inputs.size() > 2 && !qn.inputs[2].empty() ? g.value(qn.inputs[2]).dtype : DType::kU8;
    const auto yp = per_tensor(g, qn, yt);
    if (!yp || yp->type != x->p.type || yp->scale != x->p.scale ||
        yp->zero_point != x->p.zero_point)
      continue;
    mp.inputs[0] = x->q;
    mp.outputs[0] = qn.outputs[0];
    dead[qi] = true;
  }
  passes::erase_nodes(g, dead);
  eliminate_dead_code(g);  // the DQ nodes nothing reads any more
  g.infer();
  return fused;
}

}  // namespace dlas

// conv_node.h: a graph's conv node as a CUDA conv problem.
#include "system/backends/cuda/conv_node.h"

#include <cstdio>

#include "dlas/core/error.h"
#include "dlas/system/conv_shapes.h"

namespace dlas::cuda {

std::string ConvNode::layer_key() const {
  const ConvShape& s = shape;
  std::string k = str("c", s.c, "_h", s.h, "_w", s.w, "_k", s.k, "_r", s.kh, "x", s.kw, "_s",
                      s.stride_h, "x", s.stride_w, "_p", s.pad_h, "x", s.pad_w, "_d", s.dil_h, "x",
                      s.dil_w, "_g", s.groups, "_n", s.n, "_o", s.oh, "x", s.ow);
  if (s.density < 0.95) {  // a pruned layer's best schedule differs (two decimals)
    char d[16];
    std::snprintf(d, sizeof d, "_d%.2f", s.density);
    k += d;
  }
  if (s.storage != Storage::kF32) k += std::string("_") + storage_name(s.storage);
  if (act != Activation::kNone) k += std::string("_") + activation_name(act);
  if (has_residual) k += "_res";
  if (!has_bias) k += "_nobias";
  return k;
}

std::optional<ConvNode> conv_node(const Graph& g, const Node& n, std::string* why) {
  const auto no = [&](const char* reason) -> std::optional<ConvNode> {
    if (why) *why = reason;
    return std::nullopt;
  };
  const std::optional<ConvProblem> p = conv_problem_of(g, n);
  if (!p) return no("only 2-D convolutions with constant weights and explicit pads run on the GPU");
  if (p->types() == ConvTypes::kInt8) return no("int8 convolutions run on the CPU only");
  if (n.outputs.empty() || g.value(n.outputs[0]).shape.size() != 4) return no("needs a 4-D output");
  ConvNode c;
  ConvShape& s = c.shape;
  s.n = p->n, s.c = p->c, s.h = p->h, s.w = p->w, s.k = p->k, s.kh = p->kh, s.kw = p->kw;
  s.stride_h = p->stride_h, s.stride_w = p->stride_w, s.pad_h = p->pad_t, s.pad_w = p->pad_l;
  s.dil_h = p->dil_h, s.dil_w = p->dil_w, s.groups = p->groups;
  const Shape& y = g.value(n.outputs[0]).shape;
  s.oh = y[2], s.ow = y[3];
  c.act = p->epilogue.act, c.p0 = p->epilogue.p0, c.p1 = p->epilogue.p1;
  c.has_bias = p->has_bias;
  const Tensor* w = g.constant(n.inputs[1]);
  const DType xt = g.value(n.inputs[0]).dtype;
  s.storage = xt == DType::kF16    ? Storage::kF16
              : xt == DType::kBF16 ? Storage::kBF16
                                   : Storage::kF32;
  int64_t nonzero = 0;
  if (w->dtype() == DType::kF32) {
    for (int64_t i = 0; i < w->numel(); ++i) nonzero += w->data<float>()[i] != 0.f;
  } else {  // 16-bit: any bit but the sign
    const auto* bits = static_cast<const uint16_t*>(w->raw());
    for (int64_t i = 0; i < w->numel(); ++i) nonzero += (bits[i] & 0x7fffu) != 0;
  }
  s.density = w->numel() > 0 ? static_cast<double>(nonzero) / static_cast<double>(w->numel()) : 1.0;
  c.has_residual = p->epilogue.residual;
  return c;
}

}  // namespace dlas::cuda

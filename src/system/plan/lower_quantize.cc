// Per-tensor QuantizeLinear (f32 -> u8/s8) and DequantizeLinear (u8/s8 -> f32) with constant
// parameters: the float islands between int8 convs (GlobalAveragePool, Gemm, ...). Same
// arithmetic as the reference kernels: q = sat(nearbyint(x / scale) + zp), x = (q - zp) * scale,
// on the ISA's vector row kernels (dlas/algo/eltwise.h). And QLookup, the byte table of a
// DQ -> pointwise ops -> Q chain (fuse_quantized_lookup).
#include <algorithm>
#include <cstring>

#include "dlas/algo/eltwise.h"
#include "dlas/core/error.h"
#include "system/plan/steps.h"

namespace dlas::plan {
namespace {

class QuantizeStep : public Step {
 public:
  QuantizeStep(const Node& n, size_t count, bool dequantize, DType type, float scale, int32_t zp,
               Isa isa)
      : x_name_(n.inputs[0]),
        y_name_(n.outputs[0]),
        count_(count),
        dequantize_(dequantize),
        type_(type),
        scale_(scale),
        zp_(zp),
        isa_(isa) {}
  void bind(const Binder& b) override {
    x_ = b.value(x_name_);
    y_ = b.value(y_name_);
  }
  void run(ThreadPool& pool) override {
    if (dequantize_)
      dequantize_8bit(type_, scale_, zp_, isa_, count_, x_, static_cast<float*>(y_), pool);
    else
      quantize_8bit(type_, scale_, zp_, isa_, count_, static_cast<const float*>(x_), y_, pool);
  }
  std::string kernel() const override { return "fast"; }

 private:
  std::string x_name_, y_name_;
  size_t count_;
  bool dequantize_;
  DType type_;
  float scale_;
  int32_t zp_;
  Isa isa_;
  const void* x_ = nullptr;
  void* y_ = nullptr;
};

// QLookup: y[i] = table[x[i]], a byte or f32 table (lookup_8bit, lookup_8bit_f32).
class LookupStep : public Step {
 public:
  LookupStep(const Node& n, size_t count, const Tensor& table, Isa isa)
      : x_name_(n.inputs[0]),
        y_name_(n.outputs[0]),
        count_(count),
        isa_(isa),
        floats_(table.dtype() == DType::kF32) {
    std::memcpy(floats_ ? static_cast<void*>(ftable_) : static_cast<void*>(btable_), table.raw(),
                table.nbytes());
  }
  void bind(const Binder& b) override {
    x_ = b.value(x_name_);
    y_ = b.value(y_name_);
  }
  void run(ThreadPool& pool) override {
    if (floats_)
      lookup_8bit_f32(ftable_, isa_, count_, x_, static_cast<float*>(y_), pool);
    else
      lookup_8bit(btable_, isa_, count_, x_, y_, pool);
  }
  std::string kernel() const override { return "fast"; }

 private:
  std::string x_name_, y_name_;
  size_t count_;
  Isa isa_;
  bool floats_;
  uint8_t btable_[256];
  float ftable_[256];
  const void* x_ = nullptr;
  void* y_ = nullptr;
};

// QChannelScale: y = QuantizeLinear(x * gate) per channel plane (scale_quantize_8bit).
class ChannelScaleQuantizeStep : public Step {
 public:
  ChannelScaleQuantizeStep(const Node& n, size_t planes, size_t plane, size_t lanes, DType type,
                           float scale, int32_t zp, Isa isa)
      : x_name_(n.inputs[0]),
        g_name_(n.inputs[1]),
        y_name_(n.outputs[0]),
        planes_(planes),
        plane_(plane),
        lanes_(lanes),
        type_(type),
        scale_(scale),
        zp_(zp),
        isa_(isa) {}
  void bind(const Binder& b) override {
    x_ = static_cast<const float*>(b.value(x_name_));
    g_ = static_cast<const float*>(b.value(g_name_));
    y_ = b.value(y_name_);
  }
  void run(ThreadPool& pool) override {
    scale_quantize_8bit(type_, scale_, zp_, isa_, planes_, plane_, x_, g_, y_, pool, lanes_);
  }
  std::string kernel() const override { return "fast"; }

 private:
  std::string x_name_, g_name_, y_name_;
  size_t planes_, plane_, lanes_;
  DType type_;
  float scale_;
  int32_t zp_;
  Isa isa_;
  const float* x_ = nullptr;
  const float* g_ = nullptr;
  void* y_ = nullptr;
};

// The per-tensor scale (input si, a constant f32 scalar) and zero point (input si + 1, a
// constant whose type sets `type`, or absent: 0 and `type` kept) of a Q / DQ-like node; false
// when either is not constant or the type is not 8-bit.
bool per_tensor_params(const Graph& g, const Node& n, size_t si, float& scale, int32_t& zp,
                       DType& type) {
  const Tensor* s = g.constant(n.inputs[si]);
  if (!s || s->dtype() != DType::kF32 || s->numel() != 1) return false;
  scale = s->data<float>()[0];
  zp = 0;
  if (n.inputs.size() > si + 1 && !n.inputs[si + 1].empty()) {
    const Tensor* z = g.constant(n.inputs[si + 1]);
    if (!z) return false;
    zp = static_cast<int32_t>(z->get_as_int64(0));
    type = z->dtype();
  }
  return type == DType::kU8 || type == DType::kS8;
}

// Elements of value `name` as stored in layout l: a blocked value's channels rounded up to
// whole blocks (the elementwise steps run over the padding lanes too).
size_t stored_elements(const Graph& g, const std::string& name, Layout l) {
  const Shape& s = g.value(name).shape;
  if (!is_blocked(l) || s.size() < 2 || s[1] == 0) return static_cast<size_t>(shape_numel(s));
  return static_cast<size_t>(shape_numel(s) / s[1] * blocked_channels(s[1], l));
}

}  // namespace

std::unique_ptr<Step> lower_quantize(const LowerContext& ctx) {
  const Node& n = ctx.node;
  const Graph& g = ctx.graph;
  float scale = 0;
  int32_t zp = 0;
  if (n.op == "QChannelScale") {
    DType type = DType::kU8;
    if (!per_tensor_params(g, n, 2, scale, zp, type)) return nullptr;
    if (g.constant(n.inputs[0]) || g.constant(n.inputs[1])) return nullptr;
    const Shape& xs = g.value(n.inputs[0]).shape;
    if (is_blocked(ctx.x_layout)) {  // planes: channel blocks (layout_pass.cc)
      const int64_t b = layout_block(ctx.x_layout);
      const size_t planes = static_cast<size_t>(xs[0] * blocked_channels(xs[1], ctx.x_layout) / b);
      const size_t plane = static_cast<size_t>(shape_numel(xs) / (xs[0] * xs[1]) * b);
      return std::make_unique<ChannelScaleQuantizeStep>(n, planes, plane, static_cast<size_t>(b),
                                                        type, scale, zp, ctx.isa);
    }
    const size_t planes = static_cast<size_t>(xs[0] * xs[1]);
    const size_t plane = static_cast<size_t>(shape_numel(xs)) / planes;
    return std::make_unique<ChannelScaleQuantizeStep>(n, planes, plane, 1, type, scale, zp,
                                                      ctx.isa);
  }
  if (n.op == "QLookup") {
    const Tensor* t = g.constant(n.inputs[1]);
    if (!t || t->numel() != 256 || g.constant(n.inputs[0])) return nullptr;
    if (t->dtype() != DType::kF32 && t->dtype() != DType::kU8 && t->dtype() != DType::kS8)
      return nullptr;
    return std::make_unique<LookupStep>(n, stored_elements(g, n.inputs[0], ctx.x_layout), *t,
                                        ctx.isa);
  }
  const bool dq = n.op == "DequantizeLinear";
  if (!dq && n.op != "QuantizeLinear") return nullptr;
  DType type = dq ? g.value(n.inputs[0]).dtype : DType::kU8;
  if (!per_tensor_params(g, n, 1, scale, zp, type)) return nullptr;
  if (g.value(dq ? n.outputs[0] : n.inputs[0]).dtype != DType::kF32) return nullptr;
  return std::make_unique<QuantizeStep>(n, stored_elements(g, n.inputs[0], ctx.x_layout), dq, type,
                                        scale, zp, ctx.isa);
}

bool quantize_lowers_blocked(const Graph& g, const Node& n, const PlanOptions& o, Isa isa,
                             Layout l) {
  if (n.op != "QuantizeLinear" && n.op != "DequantizeLinear" && n.op != "QLookup" &&
      n.op != "QChannelScale")
    return false;
  if (n.inputs.empty() || n.outputs.size() != 1 || !g.has_value(n.inputs[0]) ||
      g.value(n.inputs[0]).shape.size() != 4)
    return false;
  if (n.op == "QChannelScale") {
    if (n.inputs.size() < 2 || !g.has_value(n.inputs[1])) return false;
    const Shape& x = g.value(n.inputs[0]).shape;
    const Shape& gate = g.value(n.inputs[1]).shape;
    if (gate != Shape{x[0], x[1], 1, 1}) return false;
  }
  const LowerContext ctx{g, n, o, isa, 1, l, l};
  return lower_quantize(ctx) != nullptr;
}

}  // namespace dlas::plan

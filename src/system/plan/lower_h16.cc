// 16-bit float (fp16 / bf16) graphs off the convolutions: Cast between f32 and a 16-bit type
// as one vector row conversion, and every other op without a native 16-bit step run on its
// f32 fast step through widened copies. The 16-bit convolutions are lowered natively
// (lower_conv); concat and the view ops copy bytes of any type.
//
// The widened step: the node is lowered again against a one-node shadow graph in which its
// 16-bit activations are f32 and its 16-bit constants are widened once, at compile time. At
// run time each 16-bit input is widened into the workspace (exactly), the f32 step runs
// there, and each output is narrowed once (round to nearest even), so the result is what the
// f32 kernel computes on the same values, rounded once: the contract the 16-bit convs keep.
// The f32 steps it wraps are memory-bound (pooling, elementwise, BatchNorm) or tiny (the
// classifier), so the conversions cost a small multiple of their own traffic rather than a
// scalar reference kernel's per-element dispatch.
#include <algorithm>
#include <cstring>

#include "dlas/algo/eltwise.h"
#include "dlas/core/error.h"
#include "system/plan/steps.h"

namespace dlas::plan {
namespace {

bool is_half(DType t) { return t == DType::kF16 || t == DType::kBF16; }

size_t round64(size_t b) { return (b + 63) / 64 * 64; }

// Cast f32 -> f16/bf16 (narrow) or f16/bf16 -> f32 (widen); same-type casts copy.
class CastStep : public Step {
 public:
  CastStep(const Node& n, size_t elems, DType from, DType to, Isa isa)
      : x_name_(n.inputs[0]), y_name_(n.outputs[0]), n_(elems), from_(from), to_(to), isa_(isa) {}
  void bind(const Binder& b) override {
    x_ = b.value(x_name_);
    y_ = b.value(y_name_);
  }
  void run(ThreadPool& pool) override {
    if (from_ == to_) {
      if (x_ != y_) std::memcpy(y_, x_, n_ * dtype_size(to_));
    } else if (to_ == DType::kF32) {
      widen_h16(from_, isa_, n_, static_cast<const uint16_t*>(x_), static_cast<float*>(y_), pool);
    } else {
      narrow_h16(to_, isa_, n_, static_cast<const float*>(x_), static_cast<uint16_t*>(y_), pool);
    }
  }
  std::string kernel() const override { return "fast"; }

 private:
  std::string x_name_, y_name_;
  size_t n_;
  DType from_, to_;
  Isa isa_;
  const void* x_ = nullptr;
  void* y_ = nullptr;
};

class WidenedStep : public Step {
 public:
  struct Buffer {
    std::string name;
    size_t elems = 0;
    size_t offset = 0;   // of its f32 copy in the workspace
    void* at = nullptr;  // the 16-bit value in the arena
  };
  WidenedStep(std::unique_ptr<Graph> shadow, std::unique_ptr<Step> inner, std::vector<Buffer> in,
              std::vector<Buffer> out, DType half, Isa isa)
      : shadow_(std::move(shadow)),
        inner_(std::move(inner)),
        in_(std::move(in)),
        out_(std::move(out)),
        half_(half),
        isa_(isa) {
    for (std::vector<Buffer>* list : {&in_, &out_})
      for (Buffer& b : *list) {
        b.offset = own_bytes_;
        own_bytes_ += round64(b.elems * sizeof(float));
      }
  }
  void bind(const Binder& b) override {
    char* ws = static_cast<char*>(b.workspace);
    for (std::vector<Buffer>* list : {&in_, &out_})
      for (Buffer& buf : *list) buf.at = b.value(buf.name);
    Binder inner;
    inner.workspace = ws + own_bytes_;
    inner.value = [this, ws, &b](const std::string& name) -> void* {
      for (const std::vector<Buffer>* list : {&in_, &out_})
        for (const Buffer& buf : *list)
          if (buf.name == name) return ws + buf.offset;
      if (const Tensor* t = shadow_->constant(name)) return const_cast<void*>(t->raw());
      return b.value(name);  // an f32 activation input
    };
    inner_->bind(inner);
    ws_ = ws;
  }
  void run(ThreadPool& pool) override {
    for (const Buffer& b : in_)
      widen_h16(half_, isa_, b.elems, static_cast<const uint16_t*>(b.at),
                reinterpret_cast<float*>(ws_ + b.offset), pool);
    inner_->run(pool);
    for (const Buffer& b : out_)
      narrow_h16(half_, isa_, b.elems, reinterpret_cast<const float*>(ws_ + b.offset),
                 static_cast<uint16_t*>(b.at), pool);
  }
  size_t workspace_bytes(int threads) const override {
    return own_bytes_ + inner_->workspace_bytes(threads);
  }
  size_t packed_bytes() const override { return inner_->packed_bytes(); }
  std::string kernel() const override { return inner_->kernel() + "[widened]"; }
  std::string knobs() const override { return inner_->knobs(); }

 private:
  std::unique_ptr<Graph> shadow_;  // holds the widened constants the inner step reads
  std::unique_ptr<Step> inner_;
  std::vector<Buffer> in_, out_;
  DType half_;
  Isa isa_;
  size_t own_bytes_ = 0;
  char* ws_ = nullptr;
};

// Add / Sub / Mul / Div on two 16-bit operands of one type, NCHW: same shapes, or an
// [N,C,H,W] operand and an [N,C,1,1] one in either order (a squeeze-and-excitation scale).
// Streamed through per-thread f32 chunks on the stack -- widened, the f32 binary kernel,
// narrowed -- so each element crosses memory once at 16 bits (the widened step makes three
// f32 trips). The values are the f32 op's, rounded once, as the widened step computes them.
class H16BinaryStep : public Step {
 public:
  // planes: N*C (per-channel) or 1 (same shape); hw: elements per plane; scale_first: the
  // per-channel operand is the first.
  H16BinaryStep(const Node& n, BinaryOp op, DType type, bool per_channel, bool scale_first,
                int64_t planes, int64_t hw, Isa isa, int64_t lanes = 1)
      : a_name_(n.inputs[0]),
        b_name_(n.inputs[1]),
        y_name_(n.outputs[0]),
        op_(op),
        type_(type),
        per_channel_(per_channel),
        scale_first_(scale_first),
        planes_(planes),
        hw_(hw),
        lanes_(lanes),
        isa_(isa) {}
  void bind(const Binder& b) override {
    a_ = static_cast<const uint16_t*>(b.value(a_name_));
    b_ = static_cast<const uint16_t*>(b.value(b_name_));
    y_ = static_cast<uint16_t*>(b.value(y_name_));
  }
  void run(ThreadPool& pool) override {
    binary_h16(type_, isa_, op_, per_channel_, scale_first_, planes_, hw_, a_, b_, y_, pool,
               lanes_);
  }
  std::string kernel() const override { return "fast"; }

 private:
  std::string a_name_, b_name_, y_name_;
  BinaryOp op_;
  DType type_;
  bool per_channel_, scale_first_;
  int64_t planes_, hw_, lanes_;  // lanes > 1: blocked planes, one scale vector each
  Isa isa_;
  const uint16_t* a_ = nullptr;
  const uint16_t* b_ = nullptr;
  uint16_t* y_ = nullptr;
};

// An activation (Relu, Sigmoid, HardSwish, Erf, HardSigmoid, Clip) of a 16-bit value, in any
// layout (elementwise over the stored elements): unary_h16's per-thread f32 chunks, each
// element crossing memory once at 16 bits, the f32 activation's value rounded once.
class H16UnaryStep : public Step {
 public:
  H16UnaryStep(const Node& n, DType type, Epilogue e, size_t elems, Isa isa)
      : x_name_(n.inputs[0]), y_name_(n.outputs[0]), type_(type), e_(e), n_(elems), isa_(isa) {}
  void bind(const Binder& b) override {
    x_ = static_cast<const uint16_t*>(b.value(x_name_));
    y_ = static_cast<uint16_t*>(b.value(y_name_));
  }
  void run(ThreadPool& pool) override {
    unary_h16(type_, isa_, e_.act, e_.p0, e_.p1, n_, x_, y_, pool);
  }
  std::string kernel() const override { return "fast"; }

 private:
  std::string x_name_, y_name_;
  DType type_;
  Epilogue e_;
  size_t n_;
  Isa isa_;
  const uint16_t* x_ = nullptr;
  uint16_t* y_ = nullptr;
};

}  // namespace

std::unique_ptr<Step> lower_cast(const LowerContext& ctx) {
  const Node& n = ctx.node;
  const Graph& g = ctx.graph;
  if (n.op != "Cast" || n.inputs.size() != 1 || n.outputs.size() != 1 || g.constant(n.inputs[0]))
    return nullptr;
  const ValueInfo& x = g.value(n.inputs[0]);
  const ValueInfo& y = g.value(n.outputs[0]);
  const bool widen = is_half(x.dtype) && y.dtype == DType::kF32;
  const bool narrow = x.dtype == DType::kF32 && is_half(y.dtype);
  if (!widen && !narrow && x.dtype != y.dtype) return nullptr;
  if (is_blocked(ctx.x_layout) || is_blocked(ctx.y_layout)) return nullptr;
  return std::make_unique<CastStep>(n, static_cast<size_t>(shape_numel(y.shape)), x.dtype, y.dtype,
                                    ctx.isa);
}

std::unique_ptr<Step> lower_widened(const LowerContext& ctx) {
  const Node& n = ctx.node;
  const Graph& g = ctx.graph;
  if (n.op == "Cast") return nullptr;
  // On 16-bit blocks (the layout pass keeps activations blocked through them): elementwise
  // activations, run by the f32 step as NCHW over the blocks' padded channels (the same
  // elements in the same order).
  const bool blocked = is_blocked(ctx.x_layout) || is_blocked(ctx.y_layout);
  if (blocked && (ctx.x_layout != ctx.y_layout || n.inputs.size() != 1 || n.outputs.size() != 1 ||
                  (n.op != "Relu" && n.op != "Clip" && n.op != "Sigmoid" && n.op != "HardSwish" &&
                   n.op != "HardSigmoid")))
    return nullptr;
  auto stored = [&](Shape s) {  // the shape of a value as the step stores it
    if (blocked && s.size() >= 2) s[1] = blocked_channels(s[1], ctx.y_layout);
    return s;
  };
  // One 16-bit type across the node's activations; its other values f32 (or absent).
  DType half = DType::kF32;
  auto note = [&](const std::string& name) {
    if (name.empty() || g.constant(name) || !g.has_value(name)) return true;
    const DType t = g.value(name).dtype;
    if (t == DType::kF32) return true;
    if (!is_half(t) || (half != DType::kF32 && half != t)) return false;
    half = t;
    return true;
  };
  for (const std::string& in : n.inputs)
    if (!note(in)) return nullptr;
  for (const std::string& out : n.outputs)
    if (!note(out)) return nullptr;
  if (half == DType::kF32) return nullptr;

  auto shadow = std::make_unique<Graph>();
  std::vector<WidenedStep::Buffer> in, out;
  for (const std::string& name : n.inputs) {
    if (name.empty()) continue;
    if (const Tensor* t = g.constant(name)) {
      Tensor w = is_half(t->dtype()) ? t->cast(DType::kF32) : *t;
      shadow->set_value({name, w.dtype(), w.shape()});
      shadow->initializers.emplace(name, std::move(w));
      continue;
    }
    const ValueInfo& v = g.value(name);
    const Shape shape = stored(v.shape);
    if (is_half(v.dtype)) {
      bool seen = false;
      for (const auto& b : in) seen |= b.name == name;
      if (!seen) in.push_back({name, static_cast<size_t>(shape_numel(shape))});
    }
    shadow->set_value({name, is_half(v.dtype) ? DType::kF32 : v.dtype, shape});
  }
  for (const std::string& name : n.outputs) {
    if (name.empty()) continue;
    const ValueInfo& v = g.value(name);
    const Shape shape = stored(v.shape);
    if (is_half(v.dtype)) out.push_back({name, static_cast<size_t>(shape_numel(shape))});
    shadow->set_value({name, is_half(v.dtype) ? DType::kF32 : v.dtype, shape});
  }
  LowerContext inner_ctx{*shadow,      n, ctx.options, ctx.isa, ctx.threads, Layout::kNchw,
                         Layout::kNchw};
  std::unique_ptr<Step> inner = lower_native(inner_ctx);
  if (!inner) return nullptr;
  return std::make_unique<WidenedStep>(std::move(shadow), std::move(inner), std::move(in),
                                       std::move(out), half, ctx.isa);
}

}  // namespace dlas::plan

namespace dlas::plan {

std::unique_ptr<Step> lower_h16_binary(const LowerContext& ctx) {
  const Node& n = ctx.node;
  const Graph& g = ctx.graph;
  const BinaryOp* op = binary_op_of(n.op);
  if (!op || n.inputs.size() != 2 || n.outputs.size() != 1) return nullptr;
  for (const std::string& in : n.inputs)
    if (!g.has_value(in) && !g.constant(in)) return nullptr;
  const ValueInfo& a = g.value(n.inputs[0]);
  const ValueInfo& b = g.value(n.inputs[1]);
  const ValueInfo& y = g.value(n.outputs[0]);
  if (!is_half(a.dtype) || b.dtype != a.dtype || y.dtype != a.dtype) return nullptr;
  const bool a_const = g.constant(n.inputs[0]) != nullptr;
  const bool b_const = g.constant(n.inputs[1]) != nullptr;
  if (a_const && b_const) return nullptr;
  if (a_const || b_const) {
    // One constant operand, NCHW: a scalar, or a vector along the trailing axes of the other
    // (a channels-last bias or scale, its leading axes 1), streamed as one plane.
    if (is_blocked(ctx.x_layout) || is_blocked(ctx.y_layout)) return nullptr;
    const Shape& full = a_const ? b.shape : a.shape;
    Shape c = a_const ? a.shape : b.shape;
    if (y.shape != full) return nullptr;
    const int64_t lanes = shape_numel(c);
    while (!c.empty() && c.front() == 1) c.erase(c.begin());
    if (c.size() > full.size() || !std::equal(c.begin(), c.end(), full.end() - c.size()) ||
        lanes > 2048 || lanes < 1)
      return nullptr;
    return std::make_unique<H16BinaryStep>(n, *op, a.dtype, true, a_const, 1, shape_numel(full),
                                           ctx.isa, lanes);
  }
  if (is_blocked(ctx.x_layout) || is_blocked(ctx.y_layout)) {
    // Same-shape operands on one block layout: elementwise over the stored elements; an
    // [N,C,1,1] scale of an [N,C,H,W] operand: per lane of each block plane.
    if (ctx.x_layout != ctx.y_layout || a.shape.size() < 2) return nullptr;
    if (a.shape == b.shape) {
      int64_t hw = 1;
      for (size_t i = 2; i < a.shape.size(); ++i) hw *= a.shape[i];
      return std::make_unique<H16BinaryStep>(n, *op, a.dtype, false, false, 1,
                                             layout_numel(a.shape[0], a.shape[1], hw, ctx.y_layout),
                                             ctx.isa);
    }
    if (a.shape.size() != 4 || b.shape.size() != 4) return nullptr;
    const bool a_full = a.shape[2] * a.shape[3] > b.shape[2] * b.shape[3];
    const Shape& full = a_full ? a.shape : b.shape;
    const Shape& scale = a_full ? b.shape : a.shape;
    if (scale != Shape{full[0], full[1], 1, 1} || y.shape != full) return nullptr;
    const int64_t lanes = layout_block(ctx.y_layout);
    return std::make_unique<H16BinaryStep>(
        n, *op, a.dtype, true, !a_full, full[0] * (blocked_channels(full[1], ctx.y_layout) / lanes),
        full[2] * full[3] * lanes, ctx.isa, lanes);
  }
  if (a.shape == b.shape)
    return std::make_unique<H16BinaryStep>(n, *op, a.dtype, false, false, 1, shape_numel(a.shape),
                                           ctx.isa);
  // One value per plane: the smaller operand is the full one's leading axes with its
  // trailing ones 1 (an [N,C,1,1] squeeze-and-excitation scale of [N,C,H,W], a
  // channels-last LayerNorm's [N,H,W,1] mean or deviation of [N,H,W,C]).
  if (a.shape.size() != b.shape.size()) return nullptr;
  const bool a_full = shape_numel(a.shape) > shape_numel(b.shape);
  const Shape& full = a_full ? a.shape : b.shape;
  const Shape& scale = a_full ? b.shape : a.shape;
  if (y.shape != full) return nullptr;
  size_t lead = 0;
  while (lead < full.size() && scale[lead] == full[lead]) ++lead;
  for (size_t i = lead; i < full.size(); ++i)
    if (scale[i] != 1) return nullptr;
  const int64_t planes = shape_numel(scale);
  if (planes < 1) return nullptr;
  return std::make_unique<H16BinaryStep>(n, *op, a.dtype, true, !a_full, planes,
                                         shape_numel(full) / planes, ctx.isa);
}

std::unique_ptr<Step> lower_h16_unary(const LowerContext& ctx) {
  const Node& n = ctx.node;
  const Graph& g = ctx.graph;
  if (n.inputs.empty() || n.outputs.size() != 1 || g.constant(n.inputs[0]) ||
      !g.has_value(n.inputs[0]) || ctx.x_layout != ctx.y_layout)
    return nullptr;
  const DType t = g.value(n.inputs[0]).dtype;
  if (!is_half(t) || g.value(n.outputs[0]).dtype != t) return nullptr;
  Epilogue e;
  if (!activation_epilogue(g, n, e)) return nullptr;
  return std::make_unique<H16UnaryStep>(n, t, e, value_bytes(g, n.outputs[0], ctx.y_layout) / 2,
                                        ctx.isa);
}

}  // namespace dlas::plan

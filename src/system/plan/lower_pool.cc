// MaxPool / AveragePool (2-D, f32, explicit pads), GlobalAveragePool and ReduceMean over
// trailing axes -> fast pooling, also on fp16 / bf16 values (NCHW; the *_h16 pools); MaxPool on u8
// / s8 values (int8 graphs) -> the 8-bit max pool. The f32 pools run on the node's layout: NCHW or
// blocked, and the 16-bit global average on 16-bit blocks too (the layout pass blocks exactly
// pool_lowers_blocked's nodes).
#include "dlas/algo/pool.h"
#include "system/plan/steps.h"

namespace dlas::plan {
namespace {

class PoolStep : public Step {
 public:
  enum class Kind { kMax, kAverage, kGlobalAverage };
  PoolStep(const Node& n, Kind kind, PoolProblem p, bool include_pad, Isa isa, Layout layout,
           DType type)
      : type_(type),
        x_name_(n.inputs[0]),
        y_name_(n.outputs[0]),
        kind_(kind),
        p_(p),
        include_pad_(include_pad),
        isa_(isa),
        layout_(layout) {}
  void bind(const Binder& b) override {
    x_ = static_cast<const float*>(b.value(x_name_));
    y_ = static_cast<float*>(b.value(y_name_));
  }
  void run(ThreadPool& pool) override {
    if (type_ != DType::kF32) {  // 16-bit: NCHW, or the global average on blocks
      const auto* x = reinterpret_cast<const uint16_t*>(x_);
      auto* y = reinterpret_cast<uint16_t*>(y_);
      if (is_blocked(layout_))
        return global_average_pool_h16(type_, isa_, layout_, p_.n, p_.c, p_.h * p_.w, x, y, pool);
      switch (kind_) {
        case Kind::kMax:
          return max_pool_h16(type_, isa_, p_, x, y, pool);
        case Kind::kAverage:
          return average_pool_h16(type_, isa_, p_, include_pad_, x, y, pool);
        case Kind::kGlobalAverage:
          return global_average_pool_h16(type_, isa_, p_.n * p_.c, p_.h * p_.w, x, y, pool);
      }
    }
    if (is_blocked(layout_)) {
      switch (kind_) {
        case Kind::kMax:
          return max_pool(isa_, layout_, p_, x_, y_, pool);
        case Kind::kAverage:
          return average_pool(isa_, layout_, p_, include_pad_, x_, y_, pool);
        case Kind::kGlobalAverage:
          return global_average_pool(isa_, layout_, p_.n, p_.c, p_.h * p_.w, x_, y_, pool);
      }
    }
    switch (kind_) {
      case Kind::kMax:
        return max_pool(isa_, p_, x_, y_, pool);
      case Kind::kAverage:
        return average_pool(isa_, p_, include_pad_, x_, y_, pool);
      case Kind::kGlobalAverage:
        return global_average_pool(isa_, p_.n * p_.c, p_.h * p_.w, x_, y_, pool);
    }
  }
  std::string kernel() const override { return "fast"; }

 private:
  DType type_;  // of x and y: kF32, or kF16 / kBF16 (NCHW; blocked: global average only)
  std::string x_name_, y_name_;
  Kind kind_;
  PoolProblem p_;
  bool include_pad_;
  Isa isa_;
  Layout layout_;
  const float* x_ = nullptr;
  float* y_ = nullptr;
};

class Q8MaxPoolStep : public Step {
 public:
  Q8MaxPoolStep(const Node& n, PoolProblem p, bool is_signed)
      : x_name_(n.inputs[0]), y_name_(n.outputs[0]), p_(p), signed_(is_signed) {}
  void bind(const Binder& b) override {
    x_ = b.value(x_name_);
    y_ = b.value(y_name_);
  }
  void run(ThreadPool& pool) override { max_pool_8bit(p_, signed_, x_, y_, pool); }
  std::string kernel() const override { return "fast"; }

 private:
  std::string x_name_, y_name_;
  PoolProblem p_;
  bool signed_;
  const void* x_ = nullptr;
  void* y_ = nullptr;
};

// The attributes of a 2-D pool with explicit pads (auto_pad NOTSET); false otherwise.
bool pool_attrs(const Node& n, PoolProblem& p) {
  if (n.attr_string("auto_pad", "NOTSET") != "NOTSET") return false;
  const auto k = n.attr_ints("kernel_shape", {});
  const auto s = n.attr_ints("strides", {1, 1});
  const auto d = n.attr_ints("dilations", {1, 1});
  const auto pads = n.attr_ints("pads", {0, 0, 0, 0});
  if (k.size() != 2 || s.size() != 2 || d.size() != 2 || pads.size() != 4) return false;
  if (n.op == "AveragePool" && (d[0] != 1 || d[1] != 1)) return false;
  p.kh = k[0], p.kw = k[1], p.stride_h = s[0], p.stride_w = s[1], p.dil_h = d[0], p.dil_w = d[1];
  p.pad_t = pads[0], p.pad_l = pads[1], p.pad_b = pads[2], p.pad_r = pads[3];
  return true;
}

}  // namespace

bool pool_lowers_blocked(const Graph& g, const Node& n, Layout l) {
  if (pool_lowers_f32(g, n)) return true;
  if (n.op != "GlobalAveragePool" || l != Layout::kNchw16c || n.inputs.empty() ||
      n.outputs.size() != 1)
    return false;
  const ValueInfo& x = g.value(n.inputs[0]);
  return (x.dtype == DType::kF16 || x.dtype == DType::kBF16) &&
         g.value(n.outputs[0]).dtype == x.dtype && x.shape.size() == 4;
}

bool pool_lowers_f32(const Graph& g, const Node& n) {
  const bool global = n.op == "GlobalAveragePool";
  if ((n.op != "MaxPool" && n.op != "AveragePool" && !global) || n.outputs.size() != 1 ||
      n.inputs.empty())
    return false;
  if (!is_f32(g, n.inputs[0]) || !is_f32(g, n.outputs[0])) return false;
  if (g.value(n.inputs[0]).shape.size() != 4 || g.value(n.outputs[0]).shape.size() != 4)
    return false;
  PoolProblem p;
  return global || pool_attrs(n, p);
}

namespace {
// ReduceMean over trailing axes of an NCHW-stored value (a decomposed LayerNorm's mean over
// the last axis, a mean over H and W): rows x (the product of the reduced axes), each row's
// mean one global average. Returns the row length, or 0 where the axes are not a trailing
// run (or reduce nothing).
int64_t trailing_mean_length(const Graph& g, const Node& n) {
  if (n.op != "ReduceMean" || n.inputs.empty() || n.outputs.size() != 1) return 0;
  const Shape& x = g.value(n.inputs[0]).shape;
  const int64_t r = static_cast<int64_t>(x.size());
  std::vector<int64_t> axes = n.attr_ints("axes", {});
  if (n.inputs.size() > 1 && !n.inputs[1].empty()) {
    const Tensor* t = g.constant(n.inputs[1]);
    if (!t) return 0;
    axes = t->to_int64_vector();
  }
  if (axes.empty() || r == 0) return 0;  // all axes, or none with noop_with_empty_axes
  std::vector<bool> reduced(static_cast<size_t>(r), false);
  for (int64_t a : axes) {
    if (a < -r || a >= r) return 0;
    reduced[static_cast<size_t>(a < 0 ? a + r : a)] = true;
  }
  int64_t first = r;
  while (first > 0 && reduced[static_cast<size_t>(first - 1)]) --first;
  for (int64_t i = 0; i < first; ++i)
    if (reduced[static_cast<size_t>(i)]) return 0;  // a reduced axis before the trailing run
  int64_t len = 1;
  for (int64_t i = first; i < r; ++i) len *= x[static_cast<size_t>(i)];
  return first < r ? len : 0;
}
}  // namespace

std::unique_ptr<Step> lower_pool(const LowerContext& ctx) {
  const Node& n = ctx.node;
  const Graph& g = ctx.graph;
  if (const int64_t len = trailing_mean_length(g, n); len > 0 && !is_blocked(ctx.y_layout)) {
    const DType xt = g.value(n.inputs[0]).dtype;
    const bool h16 = xt == DType::kF16 || xt == DType::kBF16;
    if ((!is_f32(g, n.inputs[0]) && !h16) || g.value(n.outputs[0]).dtype != xt) return nullptr;
    PoolProblem p;
    p.n = 1, p.c = shape_numel(g.value(n.inputs[0]).shape) / len, p.h = 1, p.w = len;
    p.oh = 1, p.ow = 1;
    return std::make_unique<PoolStep>(n, PoolStep::Kind::kGlobalAverage, p, false, ctx.isa,
                                      Layout::kNchw, h16 ? xt : DType::kF32);
  }
  const bool global = n.op == "GlobalAveragePool";
  if ((n.op != "MaxPool" && n.op != "AveragePool" && !global) || n.outputs.size() != 1)
    return nullptr;
  const DType xt = g.value(n.inputs[0]).dtype;
  const bool q8 = n.op == "MaxPool" && (xt == DType::kU8 || xt == DType::kS8) &&
                  g.value(n.outputs[0]).dtype == xt;
  const bool h16 = (xt == DType::kF16 || xt == DType::kBF16) && g.value(n.outputs[0]).dtype == xt &&
                   (!is_blocked(ctx.y_layout) || (global && ctx.y_layout == Layout::kNchw16c));
  if (!is_f32(g, n.inputs[0]) && !q8 && !h16) return nullptr;
  const DType type = h16 ? xt : DType::kF32;
  const Shape& x = g.value(n.inputs[0]).shape;
  const Shape& y = g.value(n.outputs[0]).shape;
  if (x.size() != 4) return nullptr;
  PoolProblem p;
  p.n = x[0], p.c = x[1], p.h = x[2], p.w = x[3];
  p.oh = y[2], p.ow = y[3];
  const Layout l = q8 ? Layout::kNchw : ctx.y_layout;
  if (global)
    return std::make_unique<PoolStep>(n, PoolStep::Kind::kGlobalAverage, p, false, ctx.isa, l,
                                      type);
  if (!pool_attrs(n, p)) return nullptr;
  p.validate();
  if (q8) {
    // Undilated windows that each hold a tap inside the input (pads below the kernel).
    if (p.dil_h != 1 || p.dil_w != 1 || p.pad_t >= p.kh || p.pad_b >= p.kh || p.pad_l >= p.kw ||
        p.pad_r >= p.kw)
      return nullptr;
    return std::make_unique<Q8MaxPoolStep>(n, p, xt == DType::kS8);
  }
  const bool include_pad = n.attr_int("count_include_pad", 0) != 0;
  // A window covering the whole unpadded plane once (kuangliu's avg_pool2d(out, 4) at
  // the end of the CIFAR models) is a global average: one pass per plane, no window setup.
  if (n.op == "AveragePool" && p.kh == p.h && p.kw == p.w && p.oh == 1 && p.ow == 1 &&
      p.pad_t == 0 && p.pad_l == 0 && p.pad_b == 0 && p.pad_r == 0)
    return std::make_unique<PoolStep>(n, PoolStep::Kind::kGlobalAverage, p, false, ctx.isa, l,
                                      type);
  return std::make_unique<PoolStep>(
      n, n.op == "MaxPool" ? PoolStep::Kind::kMax : PoolStep::Kind::kAverage, p, include_pad,
      ctx.isa, l, type);
}

}  // namespace dlas::plan

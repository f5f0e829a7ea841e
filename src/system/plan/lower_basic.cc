// Fast steps for the simple ops around convolutions: standalone BatchNorm and ChannelAffine
// (per-channel affines), LayerNormalization and Softmax over the last axis, activations,
// Add/Sub/Mul/Div with CNN broadcasts, and the view ops (copies).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>

#include "dlas/algo/conv.h"
#include "dlas/algo/eltwise.h"
#include "system/plan/steps.h"

namespace dlas::plan {
namespace {

constexpr size_t kChunk = 16384;  // elements per parallel task: ~64 KiB, L2-friendly

// y = act(x + r) over n elements in parallel chunks (the shared epilogue kernel).
void eltwise(ThreadPool& pool, Isa isa, const Epilogue& e, const float* x, const float* r, float* y,
             size_t n) {
  pool.parallel_for((n + kChunk - 1) / kChunk, [&](size_t t) {
    const size_t lo = t * kChunk, len = std::min(kChunk, n - lo);
    if (y != x) std::memcpy(y + lo, x + lo, len * sizeof(float));
    apply_epilogue(isa, e, len, y + lo, 0.f, r ? r + lo : nullptr);
  });
}

class EltwiseStep : public Step {
 public:
  // Elementwise, so any layout: n counts the output's stored elements (padding lanes too).
  EltwiseStep(const Graph& g, const Node& n, Epilogue e, Isa isa, Layout layout)
      : x_name_(n.inputs[0]),
        r_name_(e.residual ? n.inputs[1] : std::string()),
        y_name_(n.outputs[0]),
        e_(e),
        isa_(isa),
        n_(value_bytes(g, n.outputs[0], layout) / sizeof(float)) {}
  void bind(const Binder& b) override {
    x_ = static_cast<const float*>(b.value(x_name_));
    r_ = r_name_.empty() ? nullptr : static_cast<const float*>(b.value(r_name_));
    y_ = static_cast<float*>(b.value(y_name_));
  }
  void run(ThreadPool& pool) override { eltwise(pool, isa_, e_, x_, r_, y_, n_); }
  std::string kernel() const override { return "fast"; }

 private:
  std::string x_name_, r_name_, y_name_;
  Epilogue e_;
  Isa isa_;
  size_t n_;
  const float *x_ = nullptr, *r_ = nullptr;
  float* y_ = nullptr;
};

// y = fn(x) by the C library, elementwise in parallel chunks: Sqrt (a decomposed LayerNorm's
// standard deviation) and Tanh (MaxViT's classifier), ops too rare in CNNs for a vector
// epilogue of their own.
class MathStep : public Step {
 public:
  MathStep(const Graph& g, const Node& n, Layout layout, float (*fn)(float))
      : x_name_(n.inputs[0]),
        y_name_(n.outputs[0]),
        n_(value_bytes(g, n.outputs[0], layout) / sizeof(float)),
        fn_(fn) {}
  void bind(const Binder& b) override {
    x_ = static_cast<const float*>(b.value(x_name_));
    y_ = static_cast<float*>(b.value(y_name_));
  }
  void run(ThreadPool& pool) override {
    pool.parallel_for((n_ + kChunk - 1) / kChunk, [&](size_t t) {
      const size_t lo = t * kChunk, hi = std::min(n_, lo + kChunk);
      for (size_t i = lo; i < hi; ++i) y_[i] = fn_(x_[i]);
    });
  }
  std::string kernel() const override { return "fast"; }

 private:
  std::string x_name_, y_name_;
  size_t n_;
  float (*fn_)(float);
  const float* x_ = nullptr;
  float* y_ = nullptr;
};

// y = act(concat(x0, x1, ...) * scale[c] + shift[c]) along channels: an inference BatchNorm
// (one input, no activation) or a ChannelAffine. On a blocked layout every input but a lone
// one holds whole blocks (the layout pass checks), and scale and shift are padded with zeros
// to each input's whole blocks and applied per lane. The work is cut into runs of about
// kChunk elements: several small planes (or blocks) of one input, or part of a large one.
class ChannelAffineStep : public Step {
 public:
  ChannelAffineStep(const Graph& g, const Node& n, size_t inputs, std::vector<float> scale,
                    std::vector<float> shift, Epilogue e, Isa isa, Layout layout)
      : in_names_(n.inputs.begin(), n.inputs.begin() + static_cast<std::ptrdiff_t>(inputs)),
        y_name_(n.outputs[0]),
        e_(e),
        isa_(isa) {
    const Shape& y = g.value(n.outputs[0]).shape;
    batch_ = y[0];
    plane_ = shape_numel(y) / (y[0] * y[1]);
    lanes_ = static_cast<int64_t>(layout_block(layout));
    int64_t ch = 0, stored = 0;  // real and stored channels before input k
    for (size_t k = 0; k < inputs; ++k) {
      const int64_t c = g.value(n.inputs[k]).shape[1];
      const int64_t sc = blocked_channels(c, layout);
      for (int64_t j = 0; j < sc; ++j) {
        scale_.push_back(j < c ? scale[static_cast<size_t>(ch + j)] : 0.f);
        shift_.push_back(j < c ? shift[static_cast<size_t>(ch + j)] : 0.f);
      }
      in_image_.push_back(sc * plane_);
      // Runs: planes (or blocks) of lanes_ channels, grouped or split to about kChunk elements.
      const int64_t unit = plane_ * lanes_, units = sc / lanes_;
      const int64_t group = std::max<int64_t>(1, static_cast<int64_t>(kChunk) / unit);
      const int64_t parts = std::max<int64_t>(1, unit / static_cast<int64_t>(kChunk));
      const int64_t per_part = (plane_ + parts - 1) / parts;
      for (int64_t b = 0; b < units; b += group)
        for (int64_t p0 = 0; p0 < plane_; p0 += per_part)
          runs_.push_back(
              {k, b, std::min(group, units - b), p0, std::min(plane_, p0 + per_part), stored});
      ch += c;
      stored += sc;
    }
    out_image_ = stored * plane_;
  }
  void bind(const Binder& b) override {
    ins_.clear();
    for (const std::string& name : in_names_)
      ins_.push_back(static_cast<const float*>(b.value(name)));
    y_ = static_cast<float*>(b.value(y_name_));
  }
  void run(ThreadPool& pool) override {
    const size_t runs = runs_.size();
    pool.parallel_for(static_cast<size_t>(batch_) * runs, [&](size_t item) {
      const int64_t img = static_cast<int64_t>(item / runs);
      const Run& r = runs_[item % runs];
      const int64_t unit = plane_ * lanes_;
      for (int64_t b = r.first; b < r.first + r.count; ++b) {
        const int64_t c = r.stored + b * lanes_;  // first stored channel of the unit
        const float* x = ins_[r.input] + img * in_image_[r.input] + b * unit + r.p0 * lanes_;
        float* y = y_ + img * out_image_ + c * plane_ + r.p0 * lanes_;
        channel_affine(isa_, e_.act, e_.p0, e_.p1, static_cast<size_t>(r.p1 - r.p0),
                       static_cast<size_t>(lanes_), x, scale_.data() + c, shift_.data() + c, y);
      }
    });
  }
  std::string kernel() const override { return "fast"; }

 private:
  struct Run {
    size_t input;
    int64_t first, count;  // planes (NCHW) or blocks of the input
    int64_t p0, p1;        // pixel range
    int64_t stored;        // the input's first stored channel in the output
  };
  std::vector<std::string> in_names_;
  std::string y_name_;
  Epilogue e_;
  Isa isa_;
  int64_t batch_ = 0, plane_ = 0, lanes_ = 1, out_image_ = 0;
  std::vector<float> scale_, shift_;  // per stored channel
  std::vector<int64_t> in_image_;     // stored elements of one image, per input
  std::vector<Run> runs_;
  std::vector<const float*> ins_;
  float* y_ = nullptr;
};

class BinaryStep : public Step {
 public:
  BinaryStep(const Node& n, BinaryOp op, Shape a, Shape b, Isa isa)
      : a_name_(n.inputs[0]),
        b_name_(n.inputs[1]),
        y_name_(n.outputs[0]),
        op_(op),
        as_(std::move(a)),
        bs_(std::move(b)),
        isa_(isa) {}
  void bind(const Binder& b) override {
    a_ = static_cast<const float*>(b.value(a_name_));
    b_ = static_cast<const float*>(b.value(b_name_));
    y_ = static_cast<float*>(b.value(y_name_));
  }
  void run(ThreadPool& pool) override { binary(isa_, op_, a_, as_, b_, bs_, y_, pool); }
  std::string kernel() const override { return "fast"; }

 private:
  std::string a_name_, b_name_, y_name_;
  BinaryOp op_;
  Shape as_, bs_;
  Isa isa_;
  const float *a_ = nullptr, *b_ = nullptr;
  float* y_ = nullptr;
};

// a op s on a blocked [N][C/B][HW][B] operand and a per-channel [N][C/B][1][B] one (a
// squeeze-and-excitation scale), in either operand order.
class BlockedChannelBinaryStep : public Step {
 public:
  BlockedChannelBinaryStep(const Node& n, BinaryOp op, bool full_first, int64_t batch,
                           int64_t blocks, int64_t plane, int64_t block)
      : a_name_(n.inputs[0]),
        b_name_(n.inputs[1]),
        y_name_(n.outputs[0]),
        op_(op),
        full_first_(full_first),
        batch_(batch),
        blocks_(blocks),
        plane_(plane),
        block_(block) {}
  void bind(const Binder& b) override {
    a_ = static_cast<const float*>(b.value(a_name_));
    b_ = static_cast<const float*>(b.value(b_name_));
    y_ = static_cast<float*>(b.value(y_name_));
  }
  void run(ThreadPool& pool) override {
    switch (op_) {
      case BinaryOp::kAdd:
        return apply(pool, [](float u, float v) { return u + v; });
      case BinaryOp::kSub:
        return apply(pool, [](float u, float v) { return u - v; });
      case BinaryOp::kMul:
        return apply(pool, [](float u, float v) { return u * v; });
      case BinaryOp::kDiv:
        return apply(pool, [](float u, float v) { return u / v; });
    }
  }
  std::string kernel() const override { return "fast"; }

 private:
  // The op hoisted out of the loops (a switch per element kept them scalar; measured
  // 0.3 ms, a fifth of the bandwidth the GlobalAveragePool before it reached, on
  // efficientnetb0's first 32x112x112 squeeze-and-excitation scale, Zen 3, 2 threads).
  // Items: a run of one channel block's pixels, about kChunk elements.
  template <class F>
  void apply(ThreadPool& pool, F f) const {
    const float* full = full_first_ ? a_ : b_;
    const float* scale = full_first_ ? b_ : a_;
    const int64_t planes = batch_ * blocks_;
    const int64_t parts = std::max<int64_t>(1, plane_ * block_ / static_cast<int64_t>(kChunk));
    const int64_t run = (plane_ + parts - 1) / parts;
    pool.parallel_for(static_cast<size_t>(planes * parts), [&](size_t item) {
      const int64_t i = static_cast<int64_t>(item) / parts;
      const int64_t j0 = static_cast<int64_t>(item) % parts * run;
      const int64_t j1 = std::min(plane_, j0 + run);
      const float* s = scale + i * block_;
      const float* x = full + (i * plane_ + j0) * block_;
      float* y = y_ + (i * plane_ + j0) * block_;
      if (block_ == 8)
        pixels<8>(x, s, y, j1 - j0, f);
      else if (block_ == 16)
        pixels<16>(x, s, y, j1 - j0, f);
      else
        for (int64_t j = 0; j < j1 - j0; ++j)
          for (int64_t l = 0; l < block_; ++l)
            y[j * block_ + l] =
                full_first_ ? f(x[j * block_ + l], s[l]) : f(s[l], x[j * block_ + l]);
    });
  }
  // `count` pixels of B lanes (B fixed: the lane loop vectorizes).
  template <int B, class F>
  void pixels(const float* x, const float* s, float* y, int64_t count, F f) const {
    float sv[B];
    for (int l = 0; l < B; ++l) sv[l] = s[l];
    if (full_first_)
      for (int64_t j = 0; j < count; ++j)
        for (int l = 0; l < B; ++l) y[j * B + l] = f(x[j * B + l], sv[l]);
    else
      for (int64_t j = 0; j < count; ++j)
        for (int l = 0; l < B; ++l) y[j * B + l] = f(sv[l], x[j * B + l]);
  }

  std::string a_name_, b_name_, y_name_;
  BinaryOp op_;
  bool full_first_;
  int64_t batch_, blocks_, plane_, block_;
  const float *a_ = nullptr, *b_ = nullptr;
  float* y_ = nullptr;
};

// Concat along channels of 4-D tensors: per image, each input's channels one after another.
// On a blocked layout every input holds whole blocks (the layout pass checks), so the
// blocked output is the same per-image run of each input's stored elements.
class ConcatStep : public Step {
 public:
  ConcatStep(const Node& n, std::vector<size_t> bytes_per_image, int64_t batch)
      : in_names_(n.inputs),
        y_name_(n.outputs[0]),
        bytes_(std::move(bytes_per_image)),
        batch_(batch) {
    for (size_t b : bytes_) out_bytes_ += b;
  }
  void bind(const Binder& b) override {
    ins_.clear();
    for (const std::string& name : in_names_)
      ins_.push_back(static_cast<const char*>(b.value(name)));
    y_ = static_cast<char*>(b.value(y_name_));
  }
  void run(ThreadPool& pool) override {
    pool.parallel_for(static_cast<size_t>(batch_) * ins_.size(), [&](size_t t) {
      const size_t img = t / ins_.size(), k = t % ins_.size();
      size_t off = 0;
      for (size_t j = 0; j < k; ++j) off += bytes_[j];
      std::memcpy(y_ + img * out_bytes_ + off, ins_[k] + img * bytes_[k], bytes_[k]);
    });
  }
  std::string kernel() const override { return "fast"; }

 private:
  std::vector<std::string> in_names_;
  std::string y_name_;
  std::vector<size_t> bytes_;
  int64_t batch_;
  size_t out_bytes_ = 0;
  std::vector<const char*> ins_;
  char* y_ = nullptr;
};

class CopyStep : public Step {
 public:
  CopyStep(const Node& n, size_t bytes)
      : x_name_(n.inputs[0]), y_name_(n.outputs[0]), bytes_(bytes) {}
  void bind(const Binder& b) override {
    x_ = b.value(x_name_);
    y_ = b.value(y_name_);
  }
  void run(ThreadPool&) override {
    if (x_ != y_) std::memcpy(y_, x_, bytes_);
  }
  std::string kernel() const override { return "fast"; }

 private:
  std::string x_name_, y_name_;
  size_t bytes_;
  const void* x_ = nullptr;
  void* y_ = nullptr;
};

// An f32 row kernel over the last axis of a plain value (LayerNormalization, Softmax):
// fn(x, y, pool) runs every row.
class RowStep : public Step {
 public:
  using Fn = std::function<void(const float* x, float* y, ThreadPool& pool)>;
  RowStep(const Node& n, Fn fn) : x_name_(n.inputs[0]), y_name_(n.outputs[0]), fn_(std::move(fn)) {}
  void bind(const Binder& b) override {
    x_ = static_cast<const float*>(b.value(x_name_));
    y_ = static_cast<float*>(b.value(y_name_));
  }
  void run(ThreadPool& pool) override { fn_(x_, y_, pool); }
  std::string kernel() const override { return "fast"; }

 private:
  std::string x_name_, y_name_;
  Fn fn_;
  const float* x_ = nullptr;
  float* y_ = nullptr;
};

// The node's input 0 as rows of its last axis ([rows][c]), where it is a plain f32
// activation and the node's `axis` (default -1) is that last axis.
bool last_axis_rows(const LowerContext& ctx, int64_t* rows, int64_t* c) {
  const Node& n = ctx.node;
  const Graph& g = ctx.graph;
  if (n.inputs.empty() || !is_f32(g, n.inputs[0]) || is_blocked(ctx.x_layout) ||
      g.constant(n.inputs[0]))
    return false;
  const Shape& x = g.value(n.inputs[0]).shape;
  const int64_t rank = static_cast<int64_t>(x.size());
  int64_t axis = n.attr_int("axis", -1);
  if (axis < 0) axis += rank;
  if (rank < 1 || axis != rank - 1 || x.back() < 1) return false;
  *c = x.back();
  *rows = shape_numel(x) / *c;
  return true;
}

// LayerNormalization over the last axis, Scale and B constants of one value per column (or
// B absent), only Y used: the row kernel of dlas/algo/eltwise.h.
std::unique_ptr<Step> lower_layer_norm(const LowerContext& ctx) {
  const Node& n = ctx.node;
  const Graph& g = ctx.graph;
  int64_t rows = 0, c = 0;
  if (n.inputs.size() < 2 || !last_axis_rows(ctx, &rows, &c)) return nullptr;
  for (size_t o = 1; o < n.outputs.size(); ++o)
    if (!n.outputs[o].empty()) return nullptr;  // the mean / inverse deviation outputs
  // One f32 value per column: a constant of c elements (any leading ones), or absent (B).
  auto columns = [&](size_t i, float fallback, std::vector<float>& out) {
    out.assign(static_cast<size_t>(c), fallback);
    if (n.inputs.size() <= i || n.inputs[i].empty()) return true;
    const Tensor* t = g.constant(n.inputs[i]);
    if (!t || t->dtype() != DType::kF32) return false;
    if (t->numel() == 1) {
      std::fill(out.begin(), out.end(), t->data<float>()[0]);
      return true;
    }
    if (t->numel() != c || t->shape().back() != c) return false;
    std::copy(t->data<float>(), t->data<float>() + c, out.begin());
    return true;
  };
  std::vector<float> gamma, beta;
  if (!columns(1, 1.f, gamma) || !columns(2, 0.f, beta)) return nullptr;
  const float eps = n.attr_float("epsilon", 1e-5f);
  const Isa isa = ctx.isa;
  return std::make_unique<RowStep>(n, [=, gamma = std::move(gamma), beta = std::move(beta)](
                                          const float* x, float* y, ThreadPool& pool) {
    layer_norm(isa, static_cast<size_t>(rows), static_cast<size_t>(c), x, gamma.data(), beta.data(),
               eps, y, pool);
  });
}

// Softmax over the last axis: the row kernel of dlas/algo/eltwise.h.
std::unique_ptr<Step> lower_softmax(const LowerContext& ctx) {
  int64_t rows = 0, c = 0;
  if (ctx.node.inputs.size() != 1 || ctx.node.outputs.size() != 1 ||
      !last_axis_rows(ctx, &rows, &c))
    return nullptr;
  const Isa isa = ctx.isa;
  return std::make_unique<RowStep>(ctx.node, [=](const float* x, float* y, ThreadPool& pool) {
    softmax(isa, static_cast<size_t>(rows), static_cast<size_t>(c), x, y, pool);
  });
}

}  // namespace

// BatchNormalization with constant statistics, and ChannelAffine(x0, ..., scale, shift).
std::unique_ptr<Step> lower_batchnorm(const LowerContext& ctx) {
  const Node& n = ctx.node;
  const Graph& g = ctx.graph;
  if (n.op == "LayerNormalization") return lower_layer_norm(ctx);
  if (n.op == "Softmax") return lower_softmax(ctx);
  if (n.outputs.size() != 1 || n.inputs.empty() || !is_f32(g, n.inputs[0])) return nullptr;
  const Shape& y = g.value(n.outputs[0]).shape;
  if (y.size() < 2 || y[0] == 0 || y[1] == 0) return nullptr;
  if (n.op == "ChannelAffine") {
    if (n.inputs.size() < 3) return nullptr;
    const size_t inputs = n.inputs.size() - 2;
    const Tensor* scale = g.constant(n.inputs[inputs]);
    const Tensor* shift = g.constant(n.inputs[inputs + 1]);
    if (!scale || !shift || scale->dtype() != DType::kF32 || shift->dtype() != DType::kF32)
      return nullptr;
    for (size_t k = 0; k < inputs; ++k)
      if (g.constant(n.inputs[k]) || !is_f32(g, n.inputs[k])) return nullptr;
    const Epilogue e = epilogue_from_attrs(n.attr_string("activation", "none"),
                                           n.attr_floats("activation_params", {}));
    const float* sc = scale->data<float>();
    const float* sh = shift->data<float>();
    return std::make_unique<ChannelAffineStep>(
        g, n, inputs, std::vector<float>(sc, sc + scale->numel()),
        std::vector<float>(sh, sh + shift->numel()), e, ctx.isa, ctx.y_layout);
  }
  if (n.op != "BatchNormalization") return nullptr;
  const Tensor* t[4];
  for (int i = 0; i < 4; ++i) {
    t[i] = g.constant(n.inputs[1 + i]);
    if (!t[i] || t[i]->dtype() != DType::kF32) return nullptr;
  }
  const double eps = n.attr_float("epsilon", 1e-5f);
  std::vector<float> scale(static_cast<size_t>(y[1])), shift(scale.size());
  for (size_t c = 0; c < scale.size(); ++c) {
    const double s = t[0]->data<float>()[c] / std::sqrt(double(t[3]->data<float>()[c]) + eps);
    scale[c] = float(s);
    shift[c] = float(t[1]->data<float>()[c] - t[2]->data<float>()[c] * s);
  }
  return std::make_unique<ChannelAffineStep>(g, n, 1, std::move(scale), std::move(shift),
                                             Epilogue{}, ctx.isa, ctx.y_layout);
}

bool activation_epilogue(const Graph& g, const Node& n, Epilogue& e) {
  e = Epilogue{};
  if (n.op == "Relu") {
    e.act = Activation::kRelu;
  } else if (n.op == "Sigmoid") {
    e.act = Activation::kSigmoid;
  } else if (n.op == "HardSwish") {
    e.act = Activation::kHardSwish;
  } else if (n.op == "Erf") {
    e.act = Activation::kErf;
  } else if (n.op == "Gelu") {
    e.act = Activation::kGelu;
    e.p0 = static_cast<float>(std::sqrt(2.0));
  } else if (n.op == "HardSigmoid") {
    e.act = Activation::kHardSigmoid;
    e.p0 = n.attr_float("alpha", 0.2f), e.p1 = n.attr_float("beta", 0.5f);
  } else if (n.op == "Clip") {
    e.act = Activation::kClip;
    e.p0 = -std::numeric_limits<float>::infinity(), e.p1 = std::numeric_limits<float>::infinity();
    for (int i : {1, 2}) {
      if (n.inputs.size() <= size_t(i) || n.inputs[i].empty()) continue;
      const Tensor* t = g.constant(n.inputs[i]);
      if (!t || !is_float(t->dtype()) || t->numel() != 1) return false;
      (i == 1 ? e.p0 : e.p1) = t->cast(DType::kF32).data<float>()[0];
    }
  } else {
    return false;
  }
  return true;
}

std::unique_ptr<Step> lower_activation(const LowerContext& ctx) {
  const Node& n = ctx.node;
  const Graph& g = ctx.graph;
  if (n.inputs.empty() || n.outputs.size() != 1 || !is_f32(g, n.inputs[0])) return nullptr;
  if (n.op == "Sqrt")
    return std::make_unique<MathStep>(g, n, ctx.y_layout, [](float v) { return std::sqrt(v); });
  if (n.op == "Tanh")
    return std::make_unique<MathStep>(g, n, ctx.y_layout, [](float v) { return std::tanh(v); });
  Epilogue e;
  if (!activation_epilogue(g, n, e)) return nullptr;
  return std::make_unique<EltwiseStep>(g, n, e, ctx.isa, ctx.y_layout);
}

const BinaryOp* binary_op_of(const std::string& op) {
  static const std::pair<const char*, BinaryOp> kOps[] = {{"Add", BinaryOp::kAdd},
                                                          {"Sub", BinaryOp::kSub},
                                                          {"Mul", BinaryOp::kMul},
                                                          {"Div", BinaryOp::kDiv}};
  for (const auto& [name, o] : kOps)
    if (op == name) return &o;
  return nullptr;
}

std::unique_ptr<Step> lower_binary(const LowerContext& ctx) {
  const Node& n = ctx.node;
  const Graph& g = ctx.graph;
  // Pow(x, 2) (the variance of a decomposed LayerNorm) is x * x: one rounded product either
  // way.
  if (n.op == "Pow" && n.inputs.size() == 2 && is_f32(g, n.inputs[0]) &&
      !is_blocked(ctx.y_layout)) {
    const Tensor* e = g.constant(n.inputs[1]);
    if (e && e->dtype() == DType::kF32 && e->numel() == 1 && e->data<float>()[0] == 2.f) {
      Node square = n;
      square.inputs = {n.inputs[0], n.inputs[0]};
      const Shape& a = g.value(n.inputs[0]).shape;
      return std::make_unique<BinaryStep>(square, BinaryOp::kMul, a, a, ctx.isa);
    }
  }
  const BinaryOp* op = binary_op_of(n.op);
  if (!op || n.inputs.size() != 2 || !is_f32(g, n.inputs[0]) || !is_f32(g, n.inputs[1]))
    return nullptr;
  const Shape& a = g.value(n.inputs[0]).shape;
  const Shape& b = g.value(n.inputs[1]).shape;
  if (is_blocked(ctx.y_layout)) {
    // The layout pass blocks same-shape operands (elementwise over the stored elements) and
    // [N,C,1,1] scales of [N,C,H,W] (per lane).
    if (a == b) {
      const Shape flat{static_cast<int64_t>(value_bytes(g, n.outputs[0], ctx.y_layout) / 4)};
      return std::make_unique<BinaryStep>(n, *op, flat, flat, ctx.isa);
    }
    const bool full_first = a[2] * a[3] >= b[2] * b[3];
    const Shape& full = full_first ? a : b;
    const int64_t block = layout_block(ctx.y_layout);
    return std::make_unique<BlockedChannelBinaryStep>(
        n, *op, full_first, full[0], blocked_channels(full[1], ctx.y_layout) / block,
        full[2] * full[3], block);
  }
  if (!binary_supported(a, b)) return nullptr;
  return std::make_unique<BinaryStep>(n, *op, a, b, ctx.isa);
}

std::unique_ptr<Step> lower_concat(const LowerContext& ctx) {
  const Node& n = ctx.node;
  const Graph& g = ctx.graph;
  if (n.op != "Concat" || n.outputs.size() != 1 || n.inputs.empty()) return nullptr;
  const ValueInfo& y = g.value(n.outputs[0]);
  int64_t axis = n.attr_int("axis", 0);
  if (axis < 0) axis += static_cast<int64_t>(y.shape.size());
  const int64_t rank = static_cast<int64_t>(y.shape.size());
  if (axis < 0 || axis >= rank) return nullptr;
  std::vector<size_t> bytes;
  if (rank == 4 && axis == 1) {  // channels, NCHW or blocked: one run per input and image
    for (const std::string& in : n.inputs) {
      if (g.constant(in) || g.value(in).dtype != y.dtype) return nullptr;
      bytes.push_back(value_bytes(g, in, ctx.y_layout) / static_cast<size_t>(y.shape[0]));
    }
    return std::make_unique<ConcatStep>(n, std::move(bytes), y.shape[0]);
  }
  // Any other axis of plain values (a class token before the patches, a rolled window):
  // one run per input and index of the dimensions before the axis.
  if (is_blocked(ctx.y_layout)) return nullptr;
  int64_t outer = 1;
  for (int64_t i = 0; i < axis; ++i) outer *= y.shape[static_cast<size_t>(i)];
  for (const std::string& in : n.inputs) {
    const Tensor* c = g.constant(in);
    const DType t = c ? c->dtype() : g.value(in).dtype;
    const Shape& s = c ? c->shape() : g.value(in).shape;
    if (t != y.dtype || outer == 0) return nullptr;
    bytes.push_back(static_cast<size_t>(shape_numel(s) / outer) * dtype_size(t));
  }
  return std::make_unique<ConcatStep>(n, std::move(bytes), outer);
}

bool is_view_op(const std::string& op) {
  static const char* kViews[] = {"Reshape",   "Flatten",  "Squeeze",
                                 "Unsqueeze", "Identity", "Dropout"};
  for (const char* v : kViews)
    if (op == v) return true;
  return false;
}

std::unique_ptr<Step> lower_copy(const LowerContext& ctx) {
  const Node& n = ctx.node;
  const bool view = is_view_op(n.op);
  if (!view || n.outputs.size() != 1 || n.inputs.empty()) return nullptr;
  const ValueInfo& y = ctx.graph.value(n.outputs[0]);
  return std::make_unique<CopyStep>(
      n, static_cast<size_t>(shape_numel(y.shape)) * dtype_size(y.dtype));
}

}  // namespace dlas::plan

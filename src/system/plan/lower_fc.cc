// Gemm (alpha = beta = 1, transA = 0, constant B, bias C of shape [N] / [1,N]) and
// MatMul of a [..., M, K] input with a constant [K,N] matrix -> the packed FC kernel, the
// input's leading dimensions folded into the rows (a Linear layer on channels-last
// activations, as ConvNeXt's and the transformers' blocks apply it); in bf16 on the native
// bf16 kernel where the path has one and the rows fill a tile. FusedMatMul (a MatMul with
// its bias, residual and activation, made by fuse_linear) -> the same kernels with the
// epilogue applied per output tile. QFc (an int8 Linear layer, made by fuse_quantized_fc)
// -> the int8 FC kernel, f32 out. MatMul of two f32 activations (attention's Q·Kᵀ and
// softmax·V) -> the batched GEMM, B packed at run time.
#include "dlas/algo/fully_connected.h"
#include "dlas/algo/matmul.h"
#include "system/plan/steps.h"
#include "system/reference/quant_kernels.h"

namespace dlas::plan {
namespace {

class FcStep : public Step {
 public:
  FcStep(const Node& n, int64_t m, std::unique_ptr<PreparedFullyConnected> fc)
      : x_name_(n.inputs[0]),
        r_name_(n.inputs.size() > 3 ? n.inputs[3] : std::string()),
        y_name_(n.outputs[0]),
        m_(m),
        fc_(std::move(fc)) {}
  void bind(const Binder& b) override {
    x_ = static_cast<const float*>(b.value(x_name_));
    r_ = r_name_.empty() ? nullptr : static_cast<const float*>(b.value(r_name_));
    y_ = static_cast<float*>(b.value(y_name_));
    ws_ = b.workspace;
  }
  void run(ThreadPool& pool) override { fc_->run(m_, x_, y_, r_, ws_, pool); }
  size_t workspace_bytes(int threads) const override { return fc_->workspace_bytes(m_, threads); }
  size_t packed_bytes() const override { return fc_->packed_bytes(); }
  std::string kernel() const override { return "fc"; }
  std::string knobs() const override { return std::string("ukernel=") + fc_->ukernel_name(m_); }

 private:
  std::string x_name_, r_name_, y_name_;
  int64_t m_;
  std::unique_ptr<PreparedFullyConnected> fc_;
  const float* x_ = nullptr;
  const float* r_ = nullptr;
  float* y_ = nullptr;
  void* ws_ = nullptr;
};

class FcBf16Step : public Step {
 public:
  FcBf16Step(const Node& n, int64_t m, std::unique_ptr<PreparedFullyConnectedBf16> fc)
      : x_name_(n.inputs[0]), y_name_(n.outputs[0]), m_(m), fc_(std::move(fc)) {}
  void bind(const Binder& b) override {
    x_ = static_cast<const uint16_t*>(b.value(x_name_));
    y_ = static_cast<uint16_t*>(b.value(y_name_));
  }
  void run(ThreadPool& pool) override { fc_->run(m_, x_, y_, pool); }
  size_t packed_bytes() const override { return fc_->packed_bytes(); }
  std::string kernel() const override { return "fc[native-bf16]"; }
  std::string compute() const override { return conv_compute_name(ConvCompute::kNativeBf16); }

 private:
  std::string x_name_, y_name_;
  int64_t m_;
  std::unique_ptr<PreparedFullyConnectedBf16> fc_;
  const uint16_t* x_ = nullptr;
  uint16_t* y_ = nullptr;
};

class QFcStep : public Step {
 public:
  QFcStep(const Node& n, int64_t m, std::unique_ptr<PreparedFullyConnectedQs8> fc)
      : x_name_(n.inputs[0]), y_name_(n.outputs[0]), m_(m), fc_(std::move(fc)) {}
  void bind(const Binder& b) override {
    x_ = b.value(x_name_);
    y_ = static_cast<float*>(b.value(y_name_));
    ws_ = b.workspace;
  }
  void run(ThreadPool& pool) override { fc_->run(m_, x_, y_, ws_, pool); }
  size_t workspace_bytes(int threads) const override { return fc_->workspace_bytes(m_, threads); }
  size_t packed_bytes() const override { return fc_->packed_bytes(); }
  std::string kernel() const override { return "fc"; }
  std::string compute() const override { return conv_compute_name(ConvCompute::kInt8); }

 private:
  std::string x_name_, y_name_;
  int64_t m_;
  std::unique_ptr<PreparedFullyConnectedQs8> fc_;
  const void* x_ = nullptr;
  float* y_ = nullptr;
  void* ws_ = nullptr;
};

class BatchedMatMulStep : public Step {
 public:
  BatchedMatMulStep(const Node& n, std::unique_ptr<BatchedMatMul> mm)
      : a_name_(n.inputs[0]), b_name_(n.inputs[1]), y_name_(n.outputs[0]), mm_(std::move(mm)) {}
  void bind(const Binder& b) override {
    a_ = static_cast<const float*>(b.value(a_name_));
    b_ = static_cast<const float*>(b.value(b_name_));
    y_ = static_cast<float*>(b.value(y_name_));
    ws_ = b.workspace;
  }
  void run(ThreadPool& pool) override { mm_->run(a_, b_, y_, ws_, pool); }
  size_t workspace_bytes(int threads) const override { return mm_->workspace_bytes(threads); }
  std::string kernel() const override { return "matmul"; }
  std::string knobs() const override { return std::string("ukernel=") + mm_->ukernel_name(); }

 private:
  std::string a_name_, b_name_, y_name_;
  std::unique_ptr<BatchedMatMul> mm_;
  const float* a_ = nullptr;
  const float* b_ = nullptr;
  float* y_ = nullptr;
  void* ws_ = nullptr;
};

// MatMul of two f32 activations, both plain and at least 2-D.
std::unique_ptr<Step> lower_batched_matmul(const LowerContext& ctx) {
  const Node& n = ctx.node;
  const Graph& g = ctx.graph;
  if (is_blocked(ctx.x_layout) || is_blocked(ctx.y_layout)) return nullptr;
  for (int i = 0; i < 2; ++i)
    if (!g.has_value(n.inputs[i]) || g.value(n.inputs[i]).dtype != DType::kF32) return nullptr;
  const Shape& a = g.value(n.inputs[0]).shape;
  const Shape& b = g.value(n.inputs[1]).shape;
  if (!BatchedMatMul::supports(a, b)) return nullptr;
  return std::make_unique<BatchedMatMulStep>(n, std::make_unique<BatchedMatMul>(a, b, ctx.isa));
}

// QFc with constant weights (and bias) on plain rows.
std::unique_ptr<Step> lower_qfc(const LowerContext& ctx) {
  const Node& n = ctx.node;
  const Graph& g = ctx.graph;
  const Tensor* w = g.constant(n.inputs[1]);
  const Tensor* b = n.inputs.size() > 2 && !n.inputs[2].empty() ? g.constant(n.inputs[2]) : nullptr;
  if (!w || (n.inputs.size() > 2 && !n.inputs[2].empty() && !b) || is_blocked(ctx.x_layout) ||
      !PreparedFullyConnectedQs8::available(ctx.isa))
    return nullptr;
  const reference::QFcParams q = reference::qfc_params(n, w->shape());
  const ValueInfo& x = g.value(n.inputs[0]);
  if (q.k < 1) return nullptr;
  const int64_t rows = shape_numel(x.shape) / q.k;
  return std::make_unique<QFcStep>(
      n, rows,
      std::make_unique<PreparedFullyConnectedQs8>(
          q.k, q.n, w->data<int8_t>(), q.trans_b, q.w_scale.data(), b ? b->data<float>() : nullptr,
          q.x_scale, q.x_zero_point, x.dtype == DType::kS8, q.epilogue, ctx.isa));
}

}  // namespace

std::unique_ptr<Step> lower_fc(const LowerContext& ctx) {
  const Node& n = ctx.node;
  const Graph& g = ctx.graph;
  if (n.op == "QFc") return lower_qfc(ctx);
  const bool fused = n.op == "FusedMatMul";
  if (n.op == "MatMul" && n.inputs.size() == 2 && n.outputs.size() == 1 &&
      !g.constant(n.inputs[0]) && !g.constant(n.inputs[1]))
    return lower_batched_matmul(ctx);
  if ((n.op != "Gemm" && n.op != "MatMul" && !fused) || n.inputs.size() < 2 ||
      n.outputs.size() != 1 || g.constant(n.inputs[0]) || !g.has_value(n.inputs[0]))
    return nullptr;
  const bool residual = fused && n.inputs.size() > 3 && !n.inputs[3].empty();
  // f32, or bf16 throughout (x, W, y) where the path has bf16 dot products.
  const DType t = g.value(n.inputs[0]).dtype;
  const bool bf16 = t == DType::kBF16 && g.value(n.outputs[0]).dtype == t && !residual &&
                    !is_blocked(ctx.y_layout) && PreparedFullyConnectedBf16::available(ctx.isa);
  if (t != DType::kF32 && !bf16) return nullptr;
  const Shape& x = g.value(n.inputs[0]).shape;
  const Tensor* w = g.constant(n.inputs[1]);
  if (x.size() < 2 || (n.op == "Gemm" && x.size() != 2) || !w || w->dtype() != t || w->rank() != 2)
    return nullptr;
  int64_t rows = 1;  // every dimension but the last (row-major: [rows][k])
  for (size_t i = 0; i + 1 < x.size(); ++i) {
    if (x[i] < 1) return nullptr;
    rows *= x[i];
  }
  bool w_is_nk = false;
  const float* bias = nullptr;
  Tensor bias_f32;
  Epilogue e;
  if (fused) {
    // FusedMatMul: act(x W + B + R), B a constant of the output's columns.
    e = epilogue_from_attrs(n.attr_string("activation", "none"),
                            n.attr_floats("activation_params", {}));
    e.residual = residual;
    if (residual && (g.constant(n.inputs[3]) || g.value(n.inputs[3]).dtype != DType::kF32 ||
                     is_blocked(ctx.x_layout)))
      return nullptr;
    if (n.inputs.size() > 2 && !n.inputs[2].empty()) {
      const Tensor* c = g.constant(n.inputs[2]);
      if (!c || c->dtype() != t || c->numel() != w->dim(1)) return nullptr;
      bias_f32 = c->cast(DType::kF32);
      bias = bias_f32.data<float>();
    }
  } else if (n.op == "Gemm") {
    if (n.attr_int("transA", 0) != 0 || n.attr_float("alpha", 1.f) != 1.f) return nullptr;
    w_is_nk = n.attr_int("transB", 0) != 0;
    if (n.inputs.size() > 2 && !n.inputs[2].empty()) {
      const Tensor* c = g.constant(n.inputs[2]);
      const int64_t cols = w_is_nk ? w->dim(0) : w->dim(1);
      if (!c || c->dtype() != t || c->numel() != cols || n.attr_float("beta", 1.f) != 1.f)
        return nullptr;
      if (c->rank() == 2 && c->dim(0) != 1) return nullptr;
      bias_f32 = c->cast(DType::kF32);
      bias = bias_f32.data<float>();
    }
  }
  const int64_t k = w_is_nk ? w->dim(1) : w->dim(0);
  const int64_t cols = w_is_nk ? w->dim(0) : w->dim(1);
  if (x.back() != k || rows < 1) return nullptr;
  if (bf16) {
    // Fewer rows than one tile (a batch-1 classifier): the f32 kernels' GEMV, widened.
    if (rows < PreparedFullyConnectedBf16::min_rows(ctx.isa)) return nullptr;
    return std::make_unique<FcBf16Step>(
        n, rows,
        std::make_unique<PreparedFullyConnectedBf16>(
            k, cols, static_cast<const uint16_t*>(w->raw()), w_is_nk, bias, e, ctx.isa));
  }
  auto fc = std::make_unique<PreparedFullyConnected>(k, cols, w->data<float>(), w_is_nk, bias, e,
                                                     ctx.isa, rows);
  return std::make_unique<FcStep>(n, rows, std::move(fc));
}

}  // namespace dlas::plan

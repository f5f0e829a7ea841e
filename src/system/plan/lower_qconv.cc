// QFusedConv (int8, made by fuse_quantized_conv) -> a prepared int8 conv algorithm
// (include/dlas/algo/qconv.h): --conv-algo / per-layer choices name the f32 twin's
// algorithm; layers it does not support use auto_qconv_algorithm. And 16-bit convs
// (FusedConv on f16 / bf16 values, from fp16 / bf16 models) -> the f32 algorithm on widened
// values, the "emulated" half path.
#include <cstring>

#include "algo/reference/quant_kernels.h"
#include "dlas/algo/conv.h"
#include "dlas/algo/qconv.h"
#include "dlas/core/error.h"
#include "dlas/system/conv_shapes.h"
#include "system/plan/steps.h"

namespace dlas::plan {
namespace {

class QConvStep : public Step {
 public:
  QConvStep(const Node& n, std::string algo, Knobs knobs, std::unique_ptr<PreparedQConv> prepared)
      : x_name_(n.inputs[0]),
        y_name_(n.outputs[0]),
        r_name_(n.inputs.size() > 3 ? n.inputs[3] : std::string()),
        algo_(std::move(algo)),
        knobs_(std::move(knobs)),
        prepared_(std::move(prepared)) {}
  void bind(const Binder& b) override {
    x_ = b.value(x_name_);
    y_ = b.value(y_name_);
    r_ = r_name_.empty() ? nullptr : b.value(r_name_);
    ws_ = b.workspace;
  }
  void run(ThreadPool& pool) override { prepared_->run(x_, y_, r_, ws_, pool); }
  size_t workspace_bytes(int threads) const override { return prepared_->workspace_bytes(threads); }
  size_t packed_bytes() const override { return prepared_->packed_bytes(); }
  std::string kernel() const override { return algo_; }
  std::string knobs() const override { return knobs_to_string(knobs_); }

 private:
  std::string x_name_, y_name_, r_name_, algo_;
  Knobs knobs_;
  std::unique_ptr<PreparedQConv> prepared_;
  const void* x_ = nullptr;
  void* y_ = nullptr;
  const void* r_ = nullptr;
  void* ws_ = nullptr;
};

// 16-bit conv on the f32 algorithms: x widened into the workspace, the f32 conv, the result
// (and residual) rounded back. HOOK: when eng-half's list lands, try
// find_hconv_algorithm(--conv-algo) / auto_hconv_algorithm here first (include/dlas/algo/hconv.h),
// which run on the 16-bit values directly (native AVX512-FP16 / BF16 where present).
class HalfConvStep : public Step {
 public:
  HalfConvStep(const Node& n, const Graph& g, DType type, std::string algo, Knobs knobs,
               std::unique_ptr<PreparedConv> prepared)
      : x_name_(n.inputs[0]),
        y_name_(n.outputs[0]),
        r_name_(n.inputs.size() > 3 ? n.inputs[3] : std::string()),
        type_(type),
        x_count_(static_cast<size_t>(shape_numel(g.value(n.inputs[0]).shape))),
        y_count_(static_cast<size_t>(shape_numel(g.value(n.outputs[0]).shape))),
        algo_(std::move(algo)),
        knobs_(std::move(knobs)),
        prepared_(std::move(prepared)) {}
  void bind(const Binder& b) override {
    x_ = static_cast<const uint16_t*>(b.value(x_name_));
    y_ = static_cast<uint16_t*>(b.value(y_name_));
    r_ = r_name_.empty() ? nullptr : static_cast<const uint16_t*>(b.value(r_name_));
    ws_ = b.workspace;
  }
  void run(ThreadPool& pool) override {
    float* xf = static_cast<float*>(ws_);
    float* yf = xf + round64(x_count_);
    float* rf = yf + round64(y_count_);
    void* inner = rf + (r_ ? round64(y_count_) : 0);
    widen(x_, xf, x_count_);
    if (r_) widen(r_, rf, y_count_);
    prepared_->run(xf, yf, r_ ? rf : nullptr, inner, pool);
    for (size_t i = 0; i < y_count_; ++i)
      y_[i] = type_ == DType::kF16 ? f32_to_f16(yf[i]) : f32_to_bf16(yf[i]);
  }
  size_t workspace_bytes(int threads) const override {
    return (round64(x_count_) + 2 * round64(y_count_)) * sizeof(float) +
           prepared_->workspace_bytes(threads);
  }
  size_t packed_bytes() const override { return prepared_->packed_bytes(); }
  std::string kernel() const override { return algo_ + "(f32-emulated)"; }
  std::string knobs() const override { return knobs_to_string(knobs_); }

 private:
  static size_t round64(size_t n) { return (n + 15) / 16 * 16; }  // floats: 64-byte multiples
  void widen(const uint16_t* s, float* d, size_t n) const {
    for (size_t i = 0; i < n; ++i)
      d[i] = type_ == DType::kF16 ? f16_to_f32(s[i]) : bf16_to_f32(s[i]);
  }
  std::string x_name_, y_name_, r_name_;
  DType type_;
  size_t x_count_, y_count_;
  std::string algo_;
  Knobs knobs_;
  std::unique_ptr<PreparedConv> prepared_;
  const uint16_t* x_ = nullptr;
  uint16_t* y_ = nullptr;
  const uint16_t* r_ = nullptr;
  void* ws_ = nullptr;
};

std::vector<float> widened(const Tensor& t) {
  std::vector<float> v(static_cast<size_t>(t.numel()));
  for (int64_t i = 0; i < t.numel(); ++i) v[i] = static_cast<float>(t.get_as_double(i));
  return v;
}

}  // namespace

std::unique_ptr<Step> lower_qconv(const LowerContext& ctx) {
  const Node& n = ctx.node;
  const Graph& g = ctx.graph;
  if (n.op != "QFusedConv") return nullptr;
  const Tensor* w = g.constant(n.inputs[1]);
  const bool has_bias = n.inputs.size() > 2 && !n.inputs[2].empty();
  const bool has_res = n.inputs.size() > 3 && !n.inputs[3].empty();
  const Tensor* b = has_bias ? g.constant(n.inputs[2]) : nullptr;
  if (!w || (has_bias && !b)) return nullptr;  // runtime weights: the reference kernel
  const QConvProblem p = reference::qfused_conv_problem(
      n, g.value(n.inputs[0]).shape, w->shape(), g.value(n.inputs[0]).dtype, has_bias,
      has_res ? g.value(n.inputs[3]).dtype : DType::kU8, has_res);
  const std::vector<float> ws = reference::qfused_conv_w_scales(n, p.conv.k);

  const QConvAlgorithm* algo = nullptr;
  Knobs knobs;
  auto choice = ctx.options.layers.find(n.name);
  if (choice != ctx.options.layers.end()) {
    algo = find_qconv_algorithm(choice->second.algo);
    DLAS_CHECK(algo, ErrorKind::kInvalidInput, n.label(), ": no int8 algorithm '",
               choice->second.algo, "'");
    DLAS_CHECK(algo->supports(p), ErrorKind::kInvalidInput, n.label(), ": int8 algorithm '",
               algo->name(), "' does not support ", p.key());
    knobs = choice->second.knobs;
  } else if (ctx.options.conv_algo != "auto") {
    algo = find_qconv_algorithm(ctx.options.conv_algo);  // no int8 twin: the auto rule
    if (algo && !algo->supports(p)) algo = nullptr;
  }
  if (!algo) {
    bool any = false;
    for (const QConvAlgorithm* a : qconv_algorithms()) any |= a->supports(p);
    if (!any) return nullptr;  // the reference kernel runs it
    algo = &auto_qconv_algorithm(p);
  }
  if (knobs.empty()) knobs = algo->default_knobs(p, ctx.isa);
  algo->knob_space(p, ctx.isa).validate(knobs, n.label());
  auto prepared = algo->prepare(p, w->data<int8_t>(), ws.data(), b ? b->data<int32_t>() : nullptr,
                                knobs, ctx.isa);
  return std::make_unique<QConvStep>(n, std::string(algo->name()), std::move(knobs),
                                     std::move(prepared));
}

std::unique_ptr<Step> lower_half_conv(const LowerContext& ctx) {
  const Node& n = ctx.node;
  const Graph& g = ctx.graph;
  if (n.op != "Conv" && n.op != "FusedConv") return nullptr;
  const DType t = g.value(n.inputs[0]).dtype;
  if (t != DType::kF16 && t != DType::kBF16) return nullptr;
  const std::optional<ConvProblem> problem = conv_problem_of(g, n);
  if (!problem) return nullptr;
  const ConvProblem& p = *problem;
  const Tensor* w = g.constant(n.inputs[1]);
  const Tensor* b = p.has_bias ? g.constant(n.inputs[2]) : nullptr;
  if (p.has_bias && !b) return nullptr;
  const std::vector<float> wf = widened(*w);
  const std::vector<float> bf = b ? widened(*b) : std::vector<float>();
  const ConvAlgorithm* algo = nullptr;
  if (ctx.options.conv_algo != "auto") {
    algo = find_conv_algorithm(ctx.options.conv_algo);
    if (algo && !algo->supports(p)) algo = nullptr;
  }
  if (!algo) algo = &auto_conv_algorithm(p, wf.data());
  Knobs knobs = algo->default_knobs(p, ctx.isa);
  auto prepared = algo->prepare(p, wf.data(), b ? bf.data() : nullptr, knobs, ctx.isa);
  return std::make_unique<HalfConvStep>(n, g, t, std::string(algo->name()), std::move(knobs),
                                        std::move(prepared));
}

}  // namespace dlas::plan

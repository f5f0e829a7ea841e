// Conv / FusedConv (2-D, f32, constant weights) -> a prepared convolution algorithm.
#include "dlas/algo/conv.h"
#include "dlas/core/error.h"
#include "system/plan/steps.h"

namespace dlas::plan {
namespace {

class ConvStep : public Step {
 public:
  ConvStep(const Node& n, std::string algo, Knobs knobs, std::unique_ptr<PreparedConv> prepared)
      : x_name_(n.inputs[0]), y_name_(n.outputs[0]),
        r_name_(n.inputs.size() > 3 ? n.inputs[3] : std::string()), algo_(std::move(algo)),
        knobs_(std::move(knobs)), prepared_(std::move(prepared)) {}
  void bind(const Binder& b) override {
    x_ = static_cast<const float*>(b.value(x_name_));
    y_ = static_cast<float*>(b.value(y_name_));
    r_ = r_name_.empty() ? nullptr : static_cast<const float*>(b.value(r_name_));
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
  std::unique_ptr<PreparedConv> prepared_;
  const float* x_ = nullptr;
  float* y_ = nullptr;
  const float* r_ = nullptr;
  void* ws_ = nullptr;
};

}  // namespace

std::unique_ptr<Step> lower_conv(const LowerContext& ctx) {
  const Node& n = ctx.node;
  const Graph& g = ctx.graph;
  if (n.op != "Conv" && n.op != "FusedConv") return nullptr;
  const ValueInfo& x = g.value(n.inputs[0]);
  const Tensor* w = g.constant(n.inputs[1]);
  const bool has_bias = n.inputs.size() > 2 && !n.inputs[2].empty();
  const Tensor* b = has_bias ? g.constant(n.inputs[2]) : nullptr;
  if (x.dtype != DType::kF32 || x.shape.size() != 4 || !w || w->dtype() != DType::kF32 ||
      (has_bias && (!b || b->dtype() != DType::kF32)) || n.attr_string("auto_pad", "NOTSET") != "NOTSET")
    return nullptr;
  const Shape& y = g.value(n.outputs[0]).shape;
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
  p.has_bias = has_bias;
  p.epilogue.act = parse_activation(n.attr_string("activation", "none"));
  const auto params = n.attr_floats("activation_params", {});
  if (params.size() == 2) p.epilogue.p0 = params[0], p.epilogue.p1 = params[1];
  p.epilogue.residual = n.inputs.size() > 3 && !n.inputs[3].empty();
  DLAS_CHECK(p.oh() == y[2] && p.ow() == y[3], ErrorKind::kInternal, n.label(),
             ": conv geometry disagrees with inference");

  const ConvAlgorithm* algo = nullptr;
  Knobs knobs;
  auto choice = ctx.options.layers.find(n.name);
  if (choice != ctx.options.layers.end()) {
    algo = find_conv_algorithm(choice->second.algo);
    DLAS_CHECK(algo, ErrorKind::kInvalidInput, n.label(), ": unknown algorithm '",
               choice->second.algo, "' (expected ", conv_algorithm_names(), ")");
    DLAS_CHECK(algo->supports(p), ErrorKind::kInvalidInput, n.label(), ": algorithm '",
               algo->name(), "' does not support ", p.key());
    knobs = choice->second.knobs;
  } else if (ctx.options.conv_algo != "auto") {
    algo = find_conv_algorithm(ctx.options.conv_algo);
    DLAS_CHECK(algo, ErrorKind::kUsage, "unknown --conv-algo '", ctx.options.conv_algo,
               "' (expected ", conv_algorithm_names(), "|auto)");
    if (!algo->supports(p)) algo = nullptr;
  }
  if (!algo) algo = &auto_conv_algorithm(p);
  if (knobs.empty()) knobs = algo->default_knobs(p, ctx.isa);
  algo->knob_space(p, ctx.isa).validate(knobs, n.label());
  auto prepared = algo->prepare(p, w->data<float>(), b ? b->data<float>() : nullptr, knobs, ctx.isa);
  return std::make_unique<ConvStep>(n, std::string(algo->name()), std::move(knobs),
                                    std::move(prepared));
}

}  // namespace dlas::plan

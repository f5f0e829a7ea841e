// QFusedConv (int8, made by fuse_quantized_conv) -> a prepared int8 conv algorithm
// (include/dlas/algo/qconv.h): --conv-algo / per-layer choices name the f32 twin's
// algorithm; layers it does not support use auto_qconv_algorithm. And 16-bit convs
// (FusedConv on f16 / bf16 values, from fp16 / bf16 models) -> the f32 algorithm on widened
// values) -> an hconv algorithm (include/dlas/algo/hconv.h), emulated or native by ISA.
#include <cstring>

#include "algo/reference/quant_kernels.h"
#include "dlas/algo/conv.h"
#include "dlas/algo/hconv.h"
#include "dlas/algo/qconv.h"
#include "dlas/core/error.h"
#include "dlas/system/conv_shapes.h"
#include "system/plan/steps.h"

namespace dlas::plan {
namespace {

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
  }
  const AlgoChoiceSpec chosen = parse_algo_choice(ctx.options.conv_algo);
  bool override_knobs = false;
  if (!algo && chosen.algo != "auto") {
    algo = find_qconv_algorithm(chosen.algo);  // no int8 twin: the auto rule
    if (algo && !algo->supports(p)) algo = nullptr;
    override_knobs = algo != nullptr;
  }
  if (!algo) {
    bool any = false;
    for (const QConvAlgorithm* a : qconv_algorithms()) any |= a->supports(p);
    if (!any) return nullptr;  // the reference kernel runs it
    algo = &auto_qconv_algorithm(p, ctx.isa);
  }
  if (knobs.empty()) knobs = algo->default_knobs(p, ctx.isa);
  if (override_knobs) apply_knob_overrides(chosen, algo->knob_space(p, ctx.isa), knobs, n.label());
  algo->knob_space(p, ctx.isa).validate(knobs, n.label());
  auto prepared = algo->prepare(p, w->data<int8_t>(), ws.data(), b ? b->data<int32_t>() : nullptr,
                                knobs, ctx.isa);
  return std::make_unique<PreparedConvStep<PreparedQConv, void>>(
      n, std::string(algo->name()), std::move(knobs), std::move(prepared));
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
  if (!w || w->dtype() != t || (p.has_bias && !b)) return nullptr;  // the reference kernel
  const HConvProblem hp{p, t};
  const std::vector<float> bf = b ? widened(*b) : std::vector<float>();
  const HConvAlgorithm* algo = nullptr;
  Knobs knobs;
  auto choice = ctx.options.layers.find(n.name);
  const AlgoChoiceSpec chosen = parse_algo_choice(ctx.options.conv_algo);
  bool override_knobs = false;
  if (choice != ctx.options.layers.end()) {
    algo = find_hconv_algorithm(choice->second.algo);
    DLAS_CHECK(algo && algo->supports(hp), ErrorKind::kInvalidInput, n.label(),
               ": no 16-bit algorithm '", choice->second.algo, "' for ", hp.key());
    knobs = choice->second.knobs;
  } else if (chosen.algo != "auto") {
    algo = find_hconv_algorithm(chosen.algo);  // no 16-bit twin: the auto rule
    if (algo && !algo->supports(hp)) algo = nullptr;
    override_knobs = algo != nullptr;
  }
  if (!algo) algo = &auto_hconv_algorithm(hp);
  if (knobs.empty()) knobs = algo->default_knobs(hp, ctx.isa);
  if (override_knobs) apply_knob_overrides(chosen, algo->knob_space(hp, ctx.isa), knobs, n.label());
  algo->knob_space(hp, ctx.isa).validate(knobs, n.label());
  auto prepared = algo->prepare(hp, static_cast<const uint16_t*>(w->raw()), b ? bf.data() : nullptr,
                                knobs, ctx.isa);
  const std::string label =
      std::string(algo->name()) + "[" + half_compute_name(prepared->compute()) + "]";
  return std::make_unique<PreparedConvStep<PreparedHConv, uint16_t>>(n, label, std::move(knobs),
                                                                     std::move(prepared));
}

}  // namespace dlas::plan

// Conv / FusedConv (2-D, f32, constant weights) -> a prepared convolution algorithm.
#include "dlas/algo/conv.h"
#include "dlas/core/error.h"
#include "dlas/system/conv_shapes.h"
#include "system/plan/steps.h"

namespace dlas::plan {

std::unique_ptr<Step> lower_conv(const LowerContext& ctx) {
  const Node& n = ctx.node;
  const Graph& g = ctx.graph;
  if (n.op != "Conv" && n.op != "FusedConv") return nullptr;
  const std::optional<ConvProblem> problem = conv_problem_of(g, n);
  if (!problem || g.value(n.inputs[0]).dtype != DType::kF32) return nullptr;
  const ConvProblem& p = *problem;
  const Tensor* w = g.constant(n.inputs[1]);
  const Tensor* b = p.has_bias ? g.constant(n.inputs[2]) : nullptr;
  if (w->dtype() != DType::kF32 || (p.has_bias && (!b || b->dtype() != DType::kF32)))
    return nullptr;
  const Shape& y = g.value(n.outputs[0]).shape;
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
  }
  const AlgoChoiceSpec chosen = parse_algo_choice(ctx.options.conv_algo);
  bool override_knobs = false;
  if (!algo && chosen.algo != "auto") {
    algo = find_conv_algorithm(chosen.algo);
    DLAS_CHECK(algo, ErrorKind::kUsage, "unknown --conv-algo '", chosen.algo, "' (expected ",
               conv_algorithm_names(), "|auto)");
    if (algo->supports(p))
      override_knobs = true;
    else
      algo = nullptr;
  }
  if (!algo) algo = &auto_conv_algorithm(p, w->data<float>());
  if (knobs.empty()) knobs = algo->default_knobs(p, ctx.isa);
  if (override_knobs) apply_knob_overrides(chosen, algo->knob_space(p, ctx.isa), knobs, n.label());
  algo->knob_space(p, ctx.isa).validate(knobs, n.label());
  auto prepared =
      algo->prepare(p, w->data<float>(), b ? b->data<float>() : nullptr, knobs, ctx.isa);
  return std::make_unique<PreparedConvStep<PreparedConv, float>>(
      n, std::string(algo->name()), std::move(knobs), std::move(prepared));
}

}  // namespace dlas::plan

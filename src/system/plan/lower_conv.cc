// Every convolution the conv operator runs -- Conv / FusedConv on f32, f16 or bf16 values
// and int8 QFusedConv (made by fuse_quantized_conv), with constant weights -> a prepared
// conv algorithm (include/dlas/algo/conv.h). A per-layer choice (--layers, --records)
// wins, then --conv-algo where the algorithm supports the layer, then the machine profile's
// entry for the layer's class, then the auto rule.
#include "dlas/algo/conv.h"
#include "dlas/algo/machine_profile.h"
#include "dlas/core/error.h"
#include "dlas/system/conv_shapes.h"
#include "system/plan/steps.h"

namespace dlas::plan {
namespace {

// The algorithm and knobs one conv layer runs with.
struct Chosen {
  const ConvAlgorithm* algo = nullptr;
  Knobs knobs;
};

Chosen choose_algorithm(const LowerContext& ctx, const ConvNode& c) {
  const Node& n = ctx.node;
  const ConvProblem& p = c.problem;
  Chosen out;
  auto choice = ctx.options.layers.find(n.name);
  if (choice != ctx.options.layers.end()) {
    out.algo = find_conv_algorithm(choice->second.algo);
    DLAS_CHECK(out.algo, ErrorKind::kInvalidInput, n.label(), ": unknown algorithm '",
               choice->second.algo, "' (expected ", conv_algorithm_names(), ")");
    DLAS_CHECK(out.algo->supports(p), ErrorKind::kInvalidInput, n.label(), ": algorithm '",
               out.algo->name(), "' does not support ", p.key());
    out.knobs = choice->second.knobs;
  }
  const AlgoChoiceSpec chosen = parse_algo_choice(ctx.options.conv_algo);
  bool override_knobs = false;
  if (!out.algo && chosen.algo != "auto") {
    out.algo = find_conv_algorithm(chosen.algo);
    DLAS_CHECK(out.algo, ErrorKind::kUsage, "unknown --conv-algo '", chosen.algo, "' (expected ",
               conv_algorithm_names(), "|auto)");
    // Layers the algorithm cannot run (e.g. winograd on a 1x1, or on int8) use the auto rule.
    if (out.algo->supports(p))
      override_knobs = true;
    else
      out.algo = nullptr;
  }
  if (!out.algo) {
    out.algo = &auto_conv_algorithm(p, ctx.isa, c.weights());
    // The machine profile's measured choice for the layer's class, where it has one; a
    // 16-bit layer computed in f32 takes the choice for the f32 problem it runs (whose
    // knobs are the 16-bit algorithm's), and its default knobs where they do not fit.
    if (auto prof = active_machine_profile(ctx.options.profile, ctx.isa, ctx.threads).profile) {
      Knobs knobs;
      if (const ConvAlgorithm* a =
              prof->choose(half_choice_problem(p, ctx.isa), ctx.isa, *out.algo, knobs);
          a && a->supports(p)) {
        out.algo = a;
        out.knobs = knobs;
        try {
          a->knob_space(p, ctx.isa).validate(knobs, n.label());
        } catch (const Error&) {
          out.knobs = a->default_knobs(p, ctx.isa);
        }
      }
    }
  }
  // Knobs a choice lacks (records or layer files written before the algorithm gained the
  // knob) take their defaults.
  for (const auto& [name, v] : out.algo->default_knobs(p, ctx.isa)) out.knobs.emplace(name, v);
  const KnobSpace space = out.algo->knob_space(p, ctx.isa);
  if (override_knobs) apply_knob_overrides(chosen, space, out.knobs, n.label());
  try {
    space.validate(out.knobs, n.label());
  } catch (const Error& e) {
    // Knobs of the layer's choice tuned on another layout than the layer runs on here.
    if (choice == ctx.options.layers.end() || choice->second.layout.empty() ||
        choice->second.layout == layout_name(p.y_layout))
      throw;
    fail(ErrorKind::kInvalidInput, e.what(), "; its choice was tuned on layout ",
         choice->second.layout, " and the layer runs ", layout_name(p.y_layout),
         " here (--layout): tune under this layout");
  }
  return out;
}

bool any_algorithm_supports(const ConvProblem& p) {
  for (const ConvAlgorithm* a : conv_algorithms())
    if (a->supports(p)) return true;
  return false;
}

}  // namespace

std::unique_ptr<Step> lower_conv(const LowerContext& ctx) {
  const Node& n = ctx.node;
  if (n.op != "Conv" && n.op != "FusedConv" && n.op != "QFusedConv") return nullptr;
  std::optional<ConvNode> c = conv_node_of(ctx.graph, n);
  if (!c) return nullptr;  // the reference kernel
  if (is_blocked(ctx.y_layout)) c->problem.set_layouts(ctx.x_layout, ctx.y_layout);
  if (!any_algorithm_supports(c->problem)) return nullptr;
  const ConvProblem& p = c->problem;
  const Shape& y = ctx.graph.value(n.outputs[0]).shape;
  DLAS_CHECK(p.oh() == y[2] && p.ow() == y[3], ErrorKind::kInternal, n.label(),
             ": conv geometry disagrees with inference");
  Chosen chosen = choose_algorithm(ctx, *c);
  auto prepared = chosen.algo->prepare(p, c->weights(), chosen.knobs, ctx.isa);
  // 16-bit layers say which arithmetic runs (emulated or native), as profile shows it.
  std::string label(chosen.algo->name());
  if (p.is_half()) label += std::string("[") + conv_compute_name(prepared->compute()) + "]";
  return std::make_unique<PreparedConvStep>(n, std::move(label), std::move(chosen.knobs),
                                            std::move(prepared));
}

}  // namespace dlas::plan

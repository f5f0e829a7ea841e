// The layout pass: decides per node whether it runs on the ISA's blocked layout (nchw8c /
// nchw16c) or NCHW, and where reorders go (LayoutPlan, steps.h).
//
//   - A convolution runs blocked when the mode allows it and a blocked implementation of its
//     algorithm supports it (conv_runs_blocked). A blocked conv reads its input blocked,
//     except a stem (<= 4 input channels per group) whose input is NCHW: its kernels read
//     the image as it is. Its residual is read in its output's layout.
//   - Layout-neutral ops follow their inputs: activations, BatchNorm, Add/Sub/Mul/Div of two
//     same-shape activations (or a [N,C,1,1] scale against [N,C,H,W]), and a channel Concat
//     (or a ChannelAffine of several inputs) of whole blocks run blocked when an input
//     arrives blocked; so do f32 MaxPool,
//     AveragePool and GlobalAveragePool (blocked pooling kernels, output in the same layout).
//   - On 16-channel blocks, and on the 8-channel blocks of a path whose int8 convs run on
//     them (AVX2), the 8-bit ops between int8 convs follow their inputs too: per-tensor
//     QuantizeLinear / DequantizeLinear, QLookup and QChannelScale (its gate read blocked).
//   - A channels-last Transpose (perm 0,2,3,1) reads a blocked input as it is and writes
//     plain [N,H,W,C] rows; the transpose back (perm 0,3,1,2) writes blocks.
//   - Every other op, and the graph's outputs, read NCHW.
// A value is reordered at most once per layout, just before its first consumer that needs
// it so; later consumers read the same copy.
#include <map>
#include <utility>

#include "dlas/algo/conv.h"
#include "dlas/algo/hconv.h"
#include "dlas/algo/machine_profile.h"
#include "dlas/algo/qconv.h"
#include "dlas/core/error.h"
#include "dlas/hw/thread_pool.h"
#include "dlas/system/conv_shapes.h"
#include "system/plan/steps.h"

namespace dlas {

const char* layout_mode_name(LayoutMode m) {
  switch (m) {
    case LayoutMode::kNchw:
      return "nchw";
    case LayoutMode::kNchwc:
      return "nchwc";
    case LayoutMode::kAuto:
      return "auto";
  }
  return "?";
}

LayoutMode parse_layout_mode(std::string_view name) {
  for (LayoutMode m : {LayoutMode::kNchw, LayoutMode::kNchwc, LayoutMode::kAuto})
    if (name == layout_mode_name(m)) return m;
  fail(ErrorKind::kUsage, "unknown layout '", name, "' (expected nchw|nchwc|auto)");
}

// Under auto, bf16 runs on blocks where the path has the native blocked kernels, below AMX
// (whose bf16 tiles run NCHW). Every bf16 conv of the graph then goes blocked, so the
// activations stay blocked between them; those the native tiles do not cover (depthwise,
// stems, grouped) run their widened twins on the blocks. Measured on an AMD Zen 4
// (AVX512-BF16, no AMX), 2 threads: bf16 on blocks ran the zoo models at 0.65-0.78x of dense
// fp32 where bf16 NCHW ran at 0.96-1.26x (docs/benchmarks.md). f16 stays NCHW: its blocked
// twins are all widened, no faster.
bool half_conv_runs_blocked(const ConvProblem& p, LayoutMode m, Isa isa) {
  if (!p.is_half() || native_blocked_layout(isa) != Layout::kNchw16c || m == LayoutMode::kNchw)
    return false;
  if (m == LayoutMode::kNchwc) return true;
  return p.w_type == DType::kBF16 && isa < Isa::kAmx && bf16_blocks_native(isa);
}

// int8 convs run on blocks only where the path has the blocked int8 kernels on its native
// blocks (the vpdpbusd tiles on nchw16c, AVX512-VNNI; the vpmaddwd tiles on nchw8c, AVX2);
// under auto with u8 input where the machine profile's int8 entry for the class says blocks
// win (counting the reorders), else below AMX (whose implicit GEMM runs NCHW); measured in
// docs/benchmarks.md ("int8 on blocks").
bool int8_conv_runs_blocked(const ConvProblem& p, LayoutMode m, Isa isa,
                            const MachineProfile* profile) {
  if (!p.is_int8() || m == LayoutMode::kNchw || !int8_blocks_native(isa)) return false;
  if (m == LayoutMode::kNchwc) return true;
  if (p.quant.x.type != DType::kU8) return false;
  if (profile)
    if (const MachineProfile::Entry* e = profile->lookup(p)) return e->blocked_wins();
  return isa < Isa::kAmx;
}

namespace plan {

size_t value_bytes(const Graph& g, const std::string& name, Layout l) {
  const ValueInfo& v = g.value(name);
  int64_t n = shape_numel(v.shape);
  if (is_blocked(l) && v.shape.size() >= 2 && v.shape[1] > 0)
    n = n / v.shape[1] * blocked_channels(v.shape[1], l);
  return static_cast<size_t>(n) * dtype_size(v.dtype);
}

namespace {

// Under auto, NCHW winograd keeps layers whose output is at least this many pixels on
// each side.
constexpr int64_t kWinogradOverBlockedMinSide = 14;

bool is_conv(const Node& n) {
  return n.op == "Conv" || n.op == "FusedConv" || n.op == "QFusedConv";
}

bool any_blocked_support(const ConvProblem& p) {
  for (const ConvAlgorithm* a : conv_algorithms())
    if (a->supports(p)) return true;
  return false;
}

// Whether conv node n runs on blocked layout L (its input in x, NCHW or L).
bool conv_runs_blocked(const Graph& g, const Node& n, const PlanOptions& o, Isa isa, Layout L,
                       Layout x) {
  const std::optional<ConvNode> c = conv_node_of(g, n);
  if (!c) return false;
  // int8 convs: on the path's int8 blocks only, where int8_conv_runs_blocked says so, never
  // a stem (<= 4 input channels, one group: its image would fill a block half or less); then
  // as f32 convs (choices, named algorithms, support).
  if (c->problem.is_int8() &&
      (L != int8_blocked_layout(isa) || (c->problem.groups == 1 && c->problem.c <= 4) ||
       !int8_conv_runs_blocked(
           c->problem, o.layout, isa,
           active_machine_profile(o.profile, isa, ThreadPool::shared(o.threads)->threads())
               .profile.get())))
    return false;
  // 16-bit convs: on 16-channel blocks only (the h16 block conversions), and only where
  // half_conv_runs_blocked says so; then as f32 convs (choices, named algorithms, support).
  if (c->problem.is_half() &&
      (L != Layout::kNchw16c || !half_conv_runs_blocked(c->problem, o.layout, isa)))
    return false;
  ConvProblem blocked = c->problem;
  blocked.set_layouts(x, L);
  auto layer = o.layers.find(n.name);
  if (layer != o.layers.end()) {
    // A choice made on this blocked layout (the tuner's blocked tasks) runs blocked. One
    // made on NCHW, or that does not say, runs blocked only under nchwc, and only when its
    // knobs are knobs of the blocked implementation too.
    const LayerChoice& choice = layer->second;
    const ConvAlgorithm* a = find_conv_algorithm(choice.algo);
    if (!a || !a->supports(blocked)) return false;
    const bool chosen_here = choice.layout == layout_name(L);
    if (!chosen_here && o.layout != LayoutMode::kNchwc) return false;
    if (choice.knobs.empty()) return true;
    try {
      a->knob_space(blocked, isa).validate(choice.knobs, n.name);
      return true;
    } catch (const Error&) {
      return false;
    }
  }
  const AlgoChoiceSpec chosen = parse_algo_choice(o.conv_algo);
  if (chosen.algo != "auto") {
    const ConvAlgorithm* a = find_conv_algorithm(chosen.algo);
    if (a && a->supports(blocked)) return true;
    // A named algorithm without a blocked implementation keeps its layers NCHW under auto.
    if (o.layout == LayoutMode::kAuto && a && a->supports(c->problem)) return false;
  }
  if (!any_blocked_support(blocked)) return false;
  if (o.layout == LayoutMode::kNchwc || c->problem.is_half() || c->problem.is_int8()) return true;
  // auto: the layer stays NCHW where the NCHW rule picks an algorithm that beats the
  // blocked kernels -- a sparse one on pruned weights, or winograd on outputs of 14x14 and
  // more where the blocked layout has no winograd (a blocked input from an NCHW producer);
  // everywhere else the blocked kernels win (docs/engine.md "Data layouts" has the
  // measurements).
  const std::string_view nchw = auto_conv_algorithm(c->problem, isa, c->weights()).name();
  if (nchw.substr(0, 7) == "sparse-") return false;
  // A machine profile's entry for the class decides by the layout that won there, counting
  // the reorders an NCHW layer costs between blocked neighbours.
  const int threads = ThreadPool::shared(o.threads)->threads();
  if (auto prof = active_machine_profile(o.profile, isa, threads).profile)
    if (const MachineProfile::Entry* e = prof->lookup(c->problem)) return e->blocked_wins();
  // Without a profile: NCHW winograd keeps large layers only where the blocked layout has no
  // winograd of its own for them.
  if (nchw == "winograd" && c->problem.oh() >= kWinogradOverBlockedMinSide &&
      c->problem.ow() >= kWinogradOverBlockedMinSide &&
      !find_conv_algorithm("winograd")->supports(blocked))
    return false;
  return true;
}

// Activations (input 0 only; Clip's bounds are constants).
bool is_unary_neutral(const Node& n) {
  return n.op == "Relu" || n.op == "Clip" || n.op == "Sigmoid" || n.op == "HardSwish" ||
         n.op == "HardSigmoid";
}

// Whether values of type t can be kept in blocked layout L: f32 in any, f16 / bf16 in
// nchw16c (the h16 block conversions' block).
bool blockable_type(DType t, Layout L) {
  return t == DType::kF32 || ((t == DType::kF16 || t == DType::kBF16) && L == Layout::kNchw16c);
}

}  // namespace

namespace {
// A Transpose of one 4-D activation of a type l can hold, with permutation `perm`.
bool is_transpose_4d(const Graph& g, const Node& n, Layout l, const std::vector<int64_t>& perm) {
  if (n.op != "Transpose" || n.inputs.size() != 1 || n.outputs.size() != 1 ||
      g.constant(n.inputs[0]) || !g.has_value(n.inputs[0]))
    return false;
  const ValueInfo& x = g.value(n.inputs[0]);
  return x.shape.size() == 4 && blockable_type(x.dtype, l) && n.attr_ints("perm", {}) == perm;
}
}  // namespace

bool transpose_reads_blocked(const Graph& g, const Node& n, Layout l) {
  return is_transpose_4d(g, n, l, {0, 2, 3, 1});
}

bool transpose_writes_blocked(const Graph& g, const Node& n, Layout l) {
  return is_transpose_4d(g, n, l, {0, 3, 1, 2});
}

namespace {

// Two non-constant 4-D activations of one type L can hold and one shape, or one of them
// [N,C,1,1] against [N,C,H,W] (a squeeze-and-excitation scale).
bool is_binary_neutral(const Graph& g, const Node& n, Layout L) {
  if (n.op != "Add" && n.op != "Sub" && n.op != "Mul" && n.op != "Div") return false;
  if (n.inputs.size() != 2 || n.outputs.size() != 1) return false;
  for (const std::string& in : n.inputs)
    if (g.constant(in) || !g.has_value(in) || !blockable_type(g.value(in).dtype, L) ||
        g.value(in).dtype != g.value(n.inputs[0]).dtype || g.value(in).shape.size() != 4)
      return false;
  const Shape& a = g.value(n.inputs[0]).shape;
  const Shape& b = g.value(n.inputs[1]).shape;
  if (a == b) return true;
  auto per_channel_of = [](const Shape& s, const Shape& full) {
    return s[0] == full[0] && s[1] == full[1] && s[2] == 1 && s[3] == 1;
  };
  return per_channel_of(a, b) || per_channel_of(b, a);
}

// A BatchNormalization of a 4-D f32 activation with constant statistics (input 0 only).
bool is_batchnorm_neutral(const Graph& g, const Node& n) {
  if (n.op != "BatchNormalization" || n.inputs.size() != 5 || n.outputs.size() != 1) return false;
  for (size_t i = 1; i < 5; ++i)
    if (!g.constant(n.inputs[i])) return false;
  const ValueInfo& x = g.value(n.inputs[0]);
  return x.dtype == DType::kF32 && x.shape.size() == 4;
}

// A channel Concat of 4-D activations of one type that L can hold, whose channel counts are
// whole blocks of L (the blocked result is then the inputs' blocks one after another).
bool is_concat_blockable(const Graph& g, const Node& n, Layout L) {
  if (n.op != "Concat" || n.outputs.size() != 1 || n.inputs.empty()) return false;
  const int64_t rank = static_cast<int64_t>(g.value(n.outputs[0]).shape.size());
  int64_t axis = n.attr_int("axis", 0);
  if (axis < 0) axis += rank;
  if (rank != 4 || axis != 1) return false;
  for (const std::string& in : n.inputs)
    if (g.constant(in) || !g.has_value(in) || !blockable_type(g.value(in).dtype, L) ||
        g.value(in).dtype != g.value(n.inputs[0]).dtype ||
        g.value(in).shape[1] % layout_block(L) != 0)
      return false;
  return true;
}

// A ChannelAffine of 4-D f32 activations: one (any channel count, as a BatchNorm), or several
// of whole blocks of L (as a Concat).
bool is_channel_affine_blockable(const Graph& g, const Node& n, Layout L) {
  if (n.op != "ChannelAffine" || n.outputs.size() != 1 || n.inputs.size() < 3) return false;
  const size_t xs = n.inputs.size() - 2;
  for (size_t k = 0; k < xs; ++k) {
    const std::string& in = n.inputs[k];
    if (g.constant(in) || !g.has_value(in) || g.value(in).dtype != DType::kF32 ||
        g.value(in).shape.size() != 4 || (xs > 1 && g.value(in).shape[1] % layout_block(L) != 0))
      return false;
  }
  return true;
}

}  // namespace

LayoutPlan plan_layouts(Graph& g, const PlanOptions& o, Isa isa) {
  LayoutPlan lp;
  const size_t count = g.nodes.size();
  lp.before.resize(count + 1);
  lp.node_layout.assign(count, Layout::kNchw);
  const Layout L = native_blocked_layout(isa);
  const bool blocking = o.layout != LayoutMode::kNchw && is_blocked(L);
  std::map<std::pair<std::string, Layout>, std::string> copies;
  // The name of `value` in layout `want`, reordering before node `at` when needed.
  auto need = [&](size_t at, const std::string& value, Layout want) -> std::string {
    if (value.empty() || g.constant(value) || !g.has_value(value)) return value;
    const Layout cur = lp.of(value);
    if (cur == want) return value;
    auto it = copies.find({value, want});
    if (it != copies.end()) return it->second;
    const std::string name = value + "@" + layout_name(want);
    ValueInfo vi = g.value(value);
    vi.name = name;
    g.set_value(vi);
    lp.before[at].push_back({value, name, cur, want});
    if (is_blocked(want)) lp.layout[name] = want;
    copies[{value, want}] = name;
    return name;
  };

  for (size_t i = 0; i < count; ++i) {
    Node n = g.nodes[i];
    Layout run = Layout::kNchw;
    std::vector<bool> placed(n.inputs.size(), false);
    if (blocking && !n.inputs.empty()) {
      const Layout x_now = lp.of(n.inputs[0]);
      if (is_conv(n)) {
        const std::optional<ConvNode> c = conv_node_of(g, n);
        const bool stem = c && c->problem.c_per_group() <= 4;
        Layout x = stem && x_now == Layout::kNchw ? Layout::kNchw : L;
        bool blocked = conv_runs_blocked(g, n, o, isa, L, x);
        // A depthwise or other few-channel conv behind an NCHW layer: its blocked kernel may
        // need blocked input (its choice made there): reorder the input then.
        if (!blocked && x != L && conv_runs_blocked(g, n, o, isa, L, L)) blocked = true, x = L;
        if (blocked) {
          run = L;
          n.inputs[0] = need(i, n.inputs[0], x);
          placed[0] = true;
          if (n.inputs.size() > 3) n.inputs[3] = need(i, n.inputs[3], L), placed[3] = true;
        }
      } else if (is_unary_neutral(n) && n.outputs.size() == 1 && x_now == L &&
                 blockable_type(g.value(n.inputs[0]).dtype, L)) {
        run = L;
        placed[0] = true;
      } else if (x_now == L && (L == Layout::kNchw16c || L == int8_blocked_layout(isa)) &&
                 quantize_lowers_blocked(g, n, o, isa, L)) {
        // 8-bit elementwise ops (per-tensor Q / DQ, byte tables) and the squeeze-and-
        // excitation gate's QChannelScale (its gate read blocked) on blocks.
        run = L;
        placed[0] = true;
        if (n.op == "QChannelScale") n.inputs[1] = need(i, n.inputs[1], L), placed[1] = true;
      } else if (x_now == L && transpose_reads_blocked(g, n, L)) {
        // Channels-last rows straight from the blocks (a ConvNeXt block's Linear layers'
        // input); the output is a plain tensor.
        placed[0] = true;
      } else if (transpose_writes_blocked(g, n, L)) {
        // Channels-last rows back to blocks (after a ConvNeXt block's Linear layers, before
        // its residual Add and the next depthwise conv); a consumer needing NCHW reorders.
        run = L;
      } else if (x_now == L && pool_lowers_blocked(g, n, L)) {
        run = L;
        placed[0] = true;
      } else if (is_batchnorm_neutral(g, n) && x_now == L) {
        run = L;
        placed[0] = true;
      } else if (is_binary_neutral(g, n, L) && (x_now == L || lp.of(n.inputs[1]) == L)) {
        run = L;
        for (size_t k = 0; k < 2; ++k) n.inputs[k] = need(i, n.inputs[k], L), placed[k] = true;
      } else if (is_channel_affine_blockable(g, n, L)) {
        // Its activation inputs as a Concat's (a lone one as a BatchNorm's): blocked when one
        // arrives blocked; the scale and shift are constants.
        const size_t xs = n.inputs.size() - 2;
        bool any = false;
        for (size_t k = 0; k < xs; ++k) any |= lp.of(n.inputs[k]) == L;
        if (any) {
          run = L;
          for (size_t k = 0; k < xs; ++k) n.inputs[k] = need(i, n.inputs[k], L), placed[k] = true;
        }
      } else if (is_concat_blockable(g, n, L)) {
        bool any = false;
        for (const std::string& in : n.inputs) any |= lp.of(in) == L;
        if (any) {
          run = L;
          for (size_t k = 0; k < n.inputs.size(); ++k)
            n.inputs[k] = need(i, n.inputs[k], L), placed[k] = true;
        }
      }
    }
    for (size_t k = 0; k < n.inputs.size(); ++k)
      if (!placed[k]) n.inputs[k] = need(i, n.inputs[k], Layout::kNchw);
    lp.node_layout[i] = run;
    if (is_blocked(run))
      for (const std::string& out : n.outputs) lp.layout[out] = run;
    lp.nodes.push_back(std::move(n));
  }
  for (const std::string& out : g.outputs) lp.outputs.push_back(need(count, out, Layout::kNchw));
  return lp;
}

}  // namespace plan
}  // namespace dlas

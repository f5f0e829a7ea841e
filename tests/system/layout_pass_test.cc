// The layout pass: blocked layers from layer to layer, reorders only where the layout
// changes (counted on a residual graph, a concat graph and a stem), every zoo model in
// nchwc equal to the reference runtime.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>

#include "dlas/algo/conv.h"
#include "dlas/algo/layout.h"
#include "dlas/core/error.h"
#include "dlas/model/zoo.h"
#include "dlas/optimize/compress_spec.h"
#include "dlas/system/compress.h"
#include "dlas/system/executor.h"
#include "dlas/system/plan.h"
#include "system/plan_test_util.h"

namespace dlas {
namespace {

// The blocked layout of the detected ISA path; tests skip where it has none.
Layout native() { return native_blocked_layout(active_isa()); }

struct Builder {
  Graph g;
  std::mt19937 rng{5};
  void input(const std::string& name, Shape shape) {
    g.inputs.push_back({name, DType::kF32, shape});
  }
  std::string constant(const std::string& name, Shape shape) {
    Tensor t(DType::kF32, shape);
    std::uniform_real_distribution<float> d(-0.3f, 0.3f);
    for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = d(rng);
    g.initializers.emplace(name, std::move(t));
    return name;
  }
  // A 3x3 (or 1x1) conv with bias, pads keeping the size.
  std::string conv(const std::string& name, const std::string& x, int64_t c, int64_t k,
                   int64_t ks = 3) {
    Node n{name,
           "Conv",
           {x, constant(name + ".w", {k, c, ks, ks}), constant(name + ".b", {k})},
           {name + ".y"},
           {}};
    n.attrs["pads"] = std::vector<int64_t>(4, ks / 2);
    g.nodes.push_back(n);
    return name + ".y";
  }
  std::string op(const std::string& name, const std::string& type,
                 std::vector<std::string> inputs) {
    g.nodes.push_back({name, type, std::move(inputs), {name + ".y"}, {}});
    return name + ".y";
  }
};

// conv -> Relu -> conv, added to the first Relu's output, then Relu: 24 channels on 9x9.
void residual_block(Builder& b) {
  b.input("x", {1, 24, 9, 9});
  const std::string a = b.op("relu_a", "Relu", {b.conv("a", "x", 24, 24)});
  const std::string c = b.conv("c", a, 24, 24);
  b.g.outputs = {b.op("relu_out", "Relu", {b.op("add", "Add", {c, a})})};
  b.g.infer();
}

int reorders(const Plan& plan) {
  int n = 0;
  for (const StepInfo& s : plan.steps()) n += s.op == "Reorder";
  return n;
}

void expect_matches_reference(const Graph& g, const Plan& plan, const std::string& what) {
  const auto in = seeded_inputs(g);
  Plan& p = const_cast<Plan&>(plan);
  expect_close(g, p.run(in), ReferenceExecutor(g).run(in), what);
}

PlanOptions blocked_options(int opt_level) {
  PlanOptions o;
  o.layout = LayoutMode::kNchwc;
  o.opt_level = opt_level;
  o.threads = 2;
  return o;
}

TEST(LayoutPass, ResidualBlockReordersOnlyAtTheEnds) {
  if (!is_blocked(native())) GTEST_SKIP() << "no blocked layout on this ISA path";
  Builder b;
  residual_block(b);
  for (int level : {0, 3}) {  // unfused (Relu and Add steps) and fused (residual FusedConv)
    const Plan plan(b.g, blocked_options(level));
    EXPECT_EQ(reorders(plan), 2) << "opt " << level;  // the input in, the output out
    for (const StepInfo& s : plan.steps())
      if (s.op != "Reorder" || s.node == "relu_out.y@nchw") {
        EXPECT_EQ(s.layout, s.op == "Reorder" ? Layout::kNchw : native()) << s.node;
      }
    expect_matches_reference(b.g, plan, "residual opt " + std::to_string(level));
  }
  PlanOptions nchw = blocked_options(3);
  nchw.layout = LayoutMode::kNchw;
  EXPECT_EQ(reorders(Plan(b.g, nchw)), 0);
}

TEST(LayoutPass, ConcatReordersEachBranchOnceAndStemsReadTheImage) {
  if (!is_blocked(native())) GTEST_SKIP() << "no blocked layout on this ISA path";
  Builder b;
  b.input("x", {1, 3, 10, 10});
  const std::string a = b.conv("stem", "x", 3, 20);  // reads NCHW x directly: no reorder
  const std::string c = b.conv("c", a, 20, 12, 1);
  Node cat{"cat", "Concat", {a, c}, {"cat.y"}, {}};
  cat.attrs["axis"] = int64_t{1};
  b.g.nodes.push_back(cat);
  // a second NCHW consumer of `a` reads the same copy
  b.g.outputs = {"cat.y", b.op("gap", "GlobalAveragePool", {a})};
  b.g.infer();
  const Plan plan(b.g, blocked_options(3));
  // a and c out to NCHW for the concat; the gap follows blocked a, its output goes out
  EXPECT_EQ(reorders(plan), 3);
  EXPECT_EQ(plan.steps().front().node, "stem");
  EXPECT_EQ(plan.steps().front().layout, native());
  expect_matches_reference(b.g, plan, "concat");
}

TEST(LayoutPass, AlignedConcatBatchNormAndChannelScaleStayBlocked) {
  if (!is_blocked(native())) GTEST_SKIP() << "no blocked layout on this ISA path";
  Builder b;
  b.input("x", {2, 16, 7, 7});
  b.input("s", {2, 48, 1, 1});  // a per-channel scale, as squeeze-and-excitation makes
  const std::string a = b.conv("a", "x", 16, 32);
  const std::string c = b.conv("c", a, 32, 16, 1);
  Node cat{"cat", "Concat", {a, c}, {"cat.y"}, {}};
  cat.attrs["axis"] = int64_t{1};
  b.g.nodes.push_back(cat);
  const std::string bn = "bn";
  b.g.nodes.push_back(
      {bn,
       "BatchNormalization",
       {"cat.y", b.constant("g", {48}), b.constant("beta", {48}), b.constant("mean", {48}), "var"},
       {"bn.y"},
       {}});
  Tensor var(DType::kF32, {48});
  for (int64_t i = 0; i < 48; ++i) var.data<float>()[i] = 0.5f + 0.01f * static_cast<float>(i);
  b.g.initializers.emplace("var", var);
  b.g.outputs = {b.op("scale", "Mul", {b.op("relu", "Relu", {"bn.y"}), "s"})};
  b.g.infer();
  const Plan plan(b.g, blocked_options(3));
  EXPECT_EQ(reorders(plan), 3);  // x and s in, the output out
  for (const StepInfo& s : plan.steps())
    if (s.op != "Reorder") {
      EXPECT_EQ(s.layout, native()) << s.node;
    }
  expect_matches_reference(b.g, plan, "concat + bn + scale");
}

// Every binary op with a per-channel operand on either side, on a blocked activation whose
// channels are not whole blocks and whose planes span several work items.
TEST(LayoutPass, ChannelBinaryOpsEitherOrderMatchTheReference) {
  if (!is_blocked(native())) GTEST_SKIP() << "no blocked layout on this ISA path";
  for (const char* op : {"Add", "Sub", "Mul", "Div"})
    for (bool scale_first : {false, true}) {
      Builder b;
      b.input("x", {2, 8, 60, 60});
      b.input("s", {2, 20, 1, 1});
      // Sigmoid keeps a divisor of the scale away from zero.
      const std::string a = b.op("sig", "Sigmoid", {b.conv("a", "x", 8, 20)});
      b.g.outputs = {scale_first ? b.op("y", op, {"s", a}) : b.op("y", op, {a, "s"})};
      b.g.infer();
      const Plan plan(b.g, blocked_options(3));
      for (const StepInfo& st : plan.steps())
        if (st.node == "y") EXPECT_EQ(st.layout, native()) << op;
      expect_matches_reference(b.g, plan, std::string(op) + (scale_first ? " scale first" : ""));
    }
}

TEST(LayoutPass, PerLayerChoicesRunBlockedOnlyUnderNchwcWithBlockedKnobs) {
  if (!is_blocked(native())) GTEST_SKIP() << "no blocked layout on this ISA path";
  Builder b;
  b.input("x", {1, 16, 6, 6});
  b.g.outputs = {b.conv("c", b.conv("a", "x", 16, 32), 32, 16)};
  b.g.infer();
  auto layout_of_step = [](const Plan& p, const std::string& node) {
    for (const StepInfo& s : p.steps())
      if (s.node == node) return s.layout;
    return Layout::kNchw;
  };
  PlanOptions o = blocked_options(3);
  o.layers["a"] = {"direct", {}};
  EXPECT_EQ(layout_of_step(Plan(b.g, o), "a"), native());
  // NCHW knobs (as a record tuned on NCHW carries) keep the layer NCHW.
  o.layers["a"] = {"direct", find_conv_algorithm("direct")->default_knobs(
                                 ConvProblem::from_key("c16_h6_w6_k32_3x3_s1x1_p1x1x1x1_d1x1_g1"),
                                 active_isa())};
  const Plan tuned(b.g, o);
  EXPECT_EQ(layout_of_step(tuned, "a"), Layout::kNchw);
  EXPECT_EQ(layout_of_step(tuned, "c"), native());
  expect_matches_reference(b.g, tuned, "per-layer choice");
  o.layout = LayoutMode::kAuto;
  o.layers["a"] = {"direct", {}};
  EXPECT_EQ(layout_of_step(Plan(b.g, o), "a"), Layout::kNchw);
  // A choice made on the blocked layout (the tuner's blocked tasks) runs blocked under auto,
  // with its blocked knobs; one made on NCHW stays NCHW; under nchw everything is NCHW.
  const ConvProblem blocked = ConvProblem::from_key("c16_h6_w6_k32_3x3_s1x1_p1x1x1x1_d1x1_g1")
                                  .set_layouts(native(), native());
  o.layers["a"] = {"direct", find_conv_algorithm("direct")->default_knobs(blocked, active_isa()),
                   layout_name(native())};
  const Plan chosen(b.g, o);
  EXPECT_EQ(layout_of_step(chosen, "a"), native());
  expect_matches_reference(b.g, chosen, "blocked choice under auto");
  o.layers["a"] = {"direct", {}, "nchw"};
  EXPECT_EQ(layout_of_step(Plan(b.g, o), "a"), Layout::kNchw);
  o.layout = LayoutMode::kNchw;
  o.layers["a"] = {"direct", {}, layout_name(native())};
  EXPECT_EQ(layout_of_step(Plan(b.g, o), "a"), Layout::kNchw);
}

TEST(LayoutPass, DepthwiseAndPoolsAfterABlockedConvStayBlocked) {
  if (!is_blocked(native())) GTEST_SKIP() << "no blocked layout on this ISA path";
  Builder b;
  b.input("x", {2, 24, 9, 9});
  const std::string a = b.conv("a", "x", 24, 24);
  const std::string mp = b.op("mp", "MaxPool", {a});
  b.g.nodes.back().attrs["kernel_shape"] = std::vector<int64_t>{3, 3};
  b.g.nodes.back().attrs["strides"] = std::vector<int64_t>{2, 2};
  b.g.nodes.back().attrs["pads"] = std::vector<int64_t>{1, 1, 1, 1};
  Node dw{"dw",
          "Conv",
          {mp, b.constant("dw.w", {24, 1, 3, 3}), b.constant("dw.b", {24})},
          {"dw.y"},
          {}};
  dw.attrs["group"] = int64_t{24};
  dw.attrs["pads"] = std::vector<int64_t>{1, 1, 1, 1};
  b.g.nodes.push_back(dw);
  const std::string ap = b.op("ap", "AveragePool", {b.op("relu", "Relu", {"dw.y"})});
  b.g.nodes.back().attrs["kernel_shape"] = std::vector<int64_t>{3, 3};
  b.g.nodes.back().attrs["pads"] = std::vector<int64_t>{1, 1, 1, 1};
  b.g.nodes.back().attrs["count_include_pad"] = int64_t{1};
  b.g.outputs = {b.op("gap", "GlobalAveragePool", {ap})};
  b.g.infer();
  for (int level : {0, 3}) {
    const Plan plan(b.g, blocked_options(level));
    EXPECT_EQ(reorders(plan), 2) << "opt " << level;  // x in, the output out
    for (const StepInfo& s : plan.steps())
      if (s.op != "Reorder") {
        EXPECT_EQ(s.layout, native()) << s.node;
      }
    expect_matches_reference(b.g, plan, "pools opt " + std::to_string(level));
  }
}

// A channels-last Transpose of a blocked conv's output (a ConvNeXt block's Linear layers'
// input) reads the blocks as they are: no reorder before it, in f32 on every blocked path
// (channel counts off the block and a ragged last block) and in bf16 on 16-bit blocks.
TEST(LayoutPass, ChannelsLastTransposeReadsTheBlocks) {
  if (!is_blocked(native())) GTEST_SKIP() << "no blocked layout on this ISA path";
  for (int64_t k : {16, 20})
    for (bool bf16 : {false, true}) {
      if (bf16 && native() != Layout::kNchw16c) continue;
      const std::string what = std::to_string(k) + " channels" + (bf16 ? " bf16" : "");
      Builder b;
      b.input("x", {2, 24, 7, 5});
      Node t{"t", "Transpose", {b.conv("a", "x", 24, k)}, {"t.y"}, {}};
      t.attrs["perm"] = std::vector<int64_t>{0, 2, 3, 1};
      b.g.nodes.push_back(t);
      b.g.outputs = {b.op("relu", "Relu", {"t.y"})};
      b.g.infer();
      if (bf16) quantize(b.g, parse_quant_spec("bf16"));
      const Plan plan(b.g, blocked_options(3));
      const auto& steps = plan.steps();
      for (size_t i = 0; i < steps.size(); ++i)
        if (steps[i].op == "Transpose") {
          ASSERT_GT(i, 0u);
          EXPECT_NE(steps[i - 1].op, "Reorder") << what;
          EXPECT_EQ(steps[i].kernel, "fast") << what;
        }
      EXPECT_EQ(reorders(plan), 1) << what;  // x in only
      const auto in = seeded_inputs(b.g);
      const auto want = ReferenceExecutor(b.g).run(in);
      const auto got = const_cast<Plan&>(plan).run(in);
      // A copy: equal to the reference's bytes but for the conv's own rounding.
      const auto [worst, scale] = worst_difference(want[0], got[0]);
      EXPECT_LE(worst, (bf16 ? 2.0 / 128 : 1e-5) * std::max(1.0, scale)) << what;
    }
}

// A ConvNeXt-style block on blocks: depthwise conv -> channels-last Transpose -> Linear
// layer -> Transpose back -> layer scale -> residual Add -> conv. The transposes read and
// write the blocks and the layer scale folds into the Linear layer, so the only reorders
// are the model's input and output; f32 on every blocked path, bf16 on 16-bit blocks.
TEST(LayoutPass, ChannelsLastBlockStaysOnBlocksAroundItsLinearLayer) {
  if (!is_blocked(native())) GTEST_SKIP() << "no blocked layout on this ISA path";
  for (int64_t c : {24, 32})
    for (bool bf16 : {false, true}) {
      if (bf16 && native() != Layout::kNchw16c) continue;
      const std::string what = std::to_string(c) + " channels" + (bf16 ? " bf16" : "");
      Builder b;
      b.input("x", {1, c, 7, 6});
      const std::string r = b.conv("a", "x", c, c);
      Node dw{"dw",
              "Conv",
              {r, b.constant("dw.w", {c, 1, 3, 3}), b.constant("dw.b", {c})},
              {"dw.y"},
              {}};
      dw.attrs["group"] = c;
      dw.attrs["pads"] = std::vector<int64_t>{1, 1, 1, 1};
      b.g.nodes.push_back(dw);
      Node t1{"t1", "Transpose", {"dw.y"}, {"t1.y"}, {}};
      t1.attrs["perm"] = std::vector<int64_t>{0, 2, 3, 1};
      b.g.nodes.push_back(t1);
      const std::string m = b.op("fc", "MatMul", {"t1.y", b.constant("fc.w", {c, c})});
      const std::string fb = b.op("fc_bias", "Add", {m, b.constant("fc.b", {c})});
      Node t2{"t2", "Transpose", {fb}, {"t2.y"}, {}};
      t2.attrs["perm"] = std::vector<int64_t>{0, 3, 1, 2};
      b.g.nodes.push_back(t2);
      const std::string s = b.op("scale", "Mul", {"t2.y", b.constant("gamma", {c, 1, 1})});
      b.g.outputs = {b.conv("c", b.op("res", "Add", {s, r}), c, c)};
      b.g.infer();
      if (bf16) quantize(b.g, parse_quant_spec("bf16"));
      const Plan plan(b.g, blocked_options(3));
      EXPECT_EQ(reorders(plan), 2) << what;  // x in, the output out
      for (const StepInfo& st : plan.steps()) EXPECT_NE(st.op, "Mul") << what;
      const auto in = seeded_inputs(b.g);
      const auto want = ReferenceExecutor(b.g).run(in);
      const auto got = const_cast<Plan&>(plan).run(in);
      const auto [worst, scale] = worst_difference(want[0], got[0]);
      EXPECT_LE(worst, (bf16 ? 8.0 / 128 : 1e-5) * std::max(1.0, scale)) << what;
    }
}

// A bf16 residual block on 16-bit blocks: the convs, the standalone Relu and the Add stay
// blocked (reorders only for the input and the output), and the plan agrees with the
// reference runtime on the same bf16 graph within a few bf16 units.
TEST(LayoutPass, Bf16ValuesStayBlockedThroughActivationsAndAdds) {
  if (native() != Layout::kNchw16c) GTEST_SKIP() << "16-bit blocks need an AVX-512 path";
  Builder b;
  residual_block(b);
  QuantSpec qs;
  qs.type = QuantType::kBF16;
  quantize(b.g, qs);
  const auto in = seeded_inputs(b.g);
  const auto want = ReferenceExecutor(b.g).run(in);
  for (int level : {0, 3}) {
    Plan plan(b.g, blocked_options(level));
    EXPECT_EQ(reorders(plan), 2) << "opt " << level;
    int blocked = 0;
    for (const StepInfo& s : plan.steps()) blocked += s.layout == Layout::kNchw16c;
    EXPECT_GE(blocked, level == 0 ? 5 : 2) << "opt " << level;  // convs, Relus, Add
    const auto got = plan.run(in);
    double scale = 0, worst = 0;
    for (int64_t i = 0; i < want[0].numel(); ++i) {
      scale = std::max(scale, std::fabs(want[0].get_as_double(i)));
      worst = std::max(worst, std::fabs(got[0].get_as_double(i) - want[0].get_as_double(i)));
    }
    EXPECT_LE(worst, 4 * scale / 128) << "opt " << level;
  }
}

TEST(LayoutPass, ModeNamesRoundTripAndBadOnesAreUsageErrors) {
  for (LayoutMode m : {LayoutMode::kNchw, LayoutMode::kNchwc, LayoutMode::kAuto})
    EXPECT_EQ(parse_layout_mode(layout_mode_name(m)), m);
  try {
    parse_layout_mode("nhwc");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kUsage);
  }
}

class LayoutZoo : public ::testing::TestWithParam<std::string> {};

// Every zoo model with every layer that has a blocked kernel blocked, and with auto's mix,
// at 2 threads and on the AVX2 path's nchw8c too.
TEST_P(LayoutZoo, BlockedModelsMatchTheReference) {
  const Graph g = small_zoo_model(GetParam());
  const auto in = seeded_inputs(g);
  const auto want = ReferenceExecutor(g).run(in);
  for (Isa isa : {active_isa(), Isa::kAvx2}) {
    if (!is_blocked(native_blocked_layout(isa)) || !isa_supported(isa)) continue;
    for (LayoutMode m : {LayoutMode::kNchwc, LayoutMode::kAuto}) {
      PlanOptions o;
      o.layout = m;
      o.threads = 2;
      o.isa = isa;
      Plan plan(g, o);
      int blocked = 0;
      for (const StepInfo& s : plan.steps()) blocked += is_blocked(s.layout);
      if (m == LayoutMode::kNchwc) {
        EXPECT_GT(blocked, 0) << GetParam();
      }
      expect_close(g, plan.run(in), want,
                   GetParam() + " " + layout_mode_name(m) + " on " + isa_name(isa));
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Zoo, LayoutZoo, zoo_model_params(), zoo_param_name);

}  // namespace
}  // namespace dlas

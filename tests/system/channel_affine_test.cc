// fuse_channel_affine: Concat -> BatchNormalization -> activation (DenseNet's pre-activation)
// becomes one ChannelAffine equal to the chain on the reference runtime; values read elsewhere
// stay; fp16 and bf16 graphs fuse too and keep their type; and the fast step equals the
// reference in NCHW and in the blocked layout, for every activation and for channel counts
// that are not whole blocks.
//   build/dlas_tests --gtest_filter='ChannelAffine*'
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "dlas/algo/layout.h"
#include "dlas/optimize/quantize.h"
#include "dlas/system/executor.h"
#include "dlas/system/passes.h"
#include "dlas/system/plan.h"

namespace dlas {
namespace {

Tensor random_f32(const Shape& s, uint32_t seed, float lo, float hi) {
  Tensor t(DType::kF32, s);
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(lo, hi);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = d(rng);
  return t;
}

// Inputs a [1,ca,h,w] and b [1,cb,h,w] -> Concat -> BatchNormalization -> `act` -> y. With
// `extra_reader`, the concat's output is also a graph output; with `convs`, a and b come from
// 1x1 convs of the inputs (so that they arrive blocked under the blocked layout).
Graph densenet_chain(int64_t ca, int64_t cb, int64_t hw, const std::string& act,
                     bool extra_reader = false, bool convs = false) {
  Graph g;
  const int64_t c = ca + cb;
  for (auto [name, ch] : {std::pair<std::string, int64_t>{"a", ca}, {"b", cb}}) {
    const std::string in = convs ? name + "_in" : name;
    g.inputs.push_back({in, DType::kF32, {1, ch, hw, hw}});
    if (!convs) continue;
    g.initializers.emplace(name + "_w", random_f32({ch, ch, 1, 1}, 9, -0.5f, 0.5f));
    g.nodes.push_back({name + "_conv", "Conv", {in, name + "_w"}, {name}, {}});
  }
  g.initializers.emplace("gamma", random_f32({c}, 1, 0.5f, 1.5f));
  g.initializers.emplace("beta", random_f32({c}, 2, -0.5f, 0.5f));
  g.initializers.emplace("mean", random_f32({c}, 3, -0.3f, 0.3f));
  g.initializers.emplace("var", random_f32({c}, 4, 0.5f, 2.f));
  Node cat{"cat", "Concat", {"a", "b"}, {"ab"}, {}};
  cat.attrs["axis"] = int64_t{1};
  g.nodes.push_back(cat);
  g.nodes.push_back(
      {"bn", "BatchNormalization", {"ab", "gamma", "beta", "mean", "var"}, {"n"}, {}});
  std::string y = "n";
  if (act == "Clip") {
    g.initializers.emplace("lo", Tensor::scalar_f32(0.f));
    g.initializers.emplace("hi", Tensor::scalar_f32(0.75f));
    g.nodes.push_back({"act", "Clip", {"n", "lo", "hi"}, {"y"}, {}});
    y = "y";
  } else if (!act.empty()) {
    g.nodes.push_back({"act", act, {"n"}, {"y"}, {}});
    y = "y";
  }
  g.outputs = {y};
  if (extra_reader) g.outputs.push_back("ab");
  g.infer();
  return g;
}

std::vector<std::string> ops_of(const Graph& g) {
  std::vector<std::string> ops;
  for (const Node& n : g.nodes) ops.push_back(n.op);
  return ops;
}

std::vector<Tensor> inputs_for(const Graph& g) {
  std::vector<Tensor> in;
  uint32_t seed = 11;
  for (const ValueInfo& v : g.inputs) in.push_back(random_f32(v.shape, seed++, -2.f, 2.f));
  return in;
}

double max_abs_diff(const Tensor& a, const Tensor& b) {
  double worst = 0;
  for (int64_t i = 0; i < a.numel(); ++i)
    worst = std::max(worst, std::fabs(double(a.data<float>()[i]) - b.data<float>()[i]));
  return worst;
}

TEST(ChannelAffine, ConcatBatchNormReluBecomeOneNodeEqualToTheChain) {
  const Graph chain = densenet_chain(16, 32, 5, "Relu");
  Graph fused = chain;
  EXPECT_EQ(fuse_channel_affine(fused), 1);
  ASSERT_EQ(ops_of(fused), std::vector<std::string>{"ChannelAffine"});
  const Node& n = fused.nodes[0];
  EXPECT_EQ(n.inputs.size(), 4u);  // a, b, scale, shift
  EXPECT_EQ(n.attr_string("activation", ""), "relu");
  EXPECT_EQ(fused.initializers.count("mean"), 0u);  // the statistics are gone
  const std::vector<Tensor> in = inputs_for(chain);
  const Tensor want = ReferenceExecutor(chain).run(in)[0];
  const Tensor got = ReferenceExecutor(fused).run(in)[0];
  EXPECT_LE(max_abs_diff(want, got), 1e-6);
  // The chain did something: some outputs clamped to zero, others scaled.
  int zeros = 0;
  for (int64_t i = 0; i < got.numel(); ++i) zeros += got.data<float>()[i] == 0.f;
  EXPECT_GT(zeros, 0);
  EXPECT_LT(zeros, got.numel());
}

TEST(ChannelAffine, ValuesReadElsewhereStay) {
  // The concat is also a graph output: only the BatchNorm and the activation fuse.
  Graph g = densenet_chain(16, 16, 4, "Relu", /*extra_reader=*/true);
  EXPECT_EQ(fuse_channel_affine(g), 1);
  EXPECT_EQ(ops_of(g), (std::vector<std::string>{"Concat", "ChannelAffine"}));
  EXPECT_EQ(g.nodes[1].inputs.size(), 3u);
  // No activation after it: the concat alone fuses.
  Graph h = densenet_chain(16, 16, 4, "");
  EXPECT_EQ(fuse_channel_affine(h), 1);
  EXPECT_EQ(ops_of(h), std::vector<std::string>{"ChannelAffine"});
  EXPECT_EQ(h.nodes[0].attr_string("activation", ""), "none");
  // A BatchNorm with neither a concat before it nor an activation after it stays.
  Graph lone;
  lone.inputs.push_back({"x", DType::kF32, {1, 8, 4, 4}});
  for (const char* s : {"gamma", "beta", "mean"})
    lone.initializers.emplace(s, random_f32({8}, 5, 0.1f, 1.f));
  lone.initializers.emplace("var", random_f32({8}, 6, 0.5f, 1.f));
  lone.nodes.push_back(
      {"bn", "BatchNormalization", {"x", "gamma", "beta", "mean", "var"}, {"y"}, {}});
  lone.outputs = {"y"};
  lone.infer();
  EXPECT_EQ(fuse_channel_affine(lone), 0);
  EXPECT_EQ(ops_of(lone), std::vector<std::string>{"BatchNormalization"});
}

// An fp16 or bf16 graph (`dlas quantize --dtype`) fuses the same way: the ChannelAffine keeps
// the activations' type, equals the unfused chain on the reference runtime (the chain rounds
// to 16 bits after the BatchNorm, the fused op once at its end: at most one 16-bit ulp), and
// the plan runs it on a fast step.
TEST(ChannelAffine, HalfGraphsFuseAndKeepTheirType) {
  for (QuantType type : {QuantType::kF16, QuantType::kBF16}) {
    const DType half = type == QuantType::kF16 ? DType::kF16 : DType::kBF16;
    Graph chain = densenet_chain(16, 24, 5, "Relu");
    QuantSpec spec;
    spec.type = type;
    convert_half(chain, spec);
    Graph fused = chain;
    EXPECT_EQ(fuse_channel_affine(fused), 1) << dtype_name(half);
    int affines = 0;
    for (const Node& n : fused.nodes) {
      EXPECT_NE(n.op, "BatchNormalization");
      EXPECT_NE(n.op, "Relu");
      if (n.op != "ChannelAffine") continue;
      ++affines;
      EXPECT_EQ(fused.value(n.outputs[0]).dtype, half);
      EXPECT_EQ(fused.value(n.inputs[0]).dtype, half);
      EXPECT_EQ(n.attr_string("activation", ""), "relu");
    }
    EXPECT_EQ(affines, 1);
    const std::vector<Tensor> in = inputs_for(chain);
    const Tensor want = ReferenceExecutor(chain).run(in)[0];
    const Tensor got = ReferenceExecutor(fused).run(in)[0];
    ASSERT_EQ(got.dtype(), DType::kF32);
    double scale = 0;
    for (int64_t i = 0; i < want.numel(); ++i)
      scale = std::max(scale, std::fabs(double(want.data<float>()[i])));
    const double ulp = std::ldexp(scale, half == DType::kF16 ? -10 : -7);
    EXPECT_LE(max_abs_diff(want, got), ulp) << dtype_name(half);
    Plan plan(fused, PlanOptions{});
    bool stepped = false;
    for (const StepInfo& st : plan.steps()) {
      EXPECT_NE(st.kernel, "reference") << st.node;
      stepped |= st.op == "ChannelAffine";
    }
    EXPECT_TRUE(stepped);
    EXPECT_LE(max_abs_diff(want, plan.run(in)[0]), ulp) << dtype_name(half);
  }
}

// The fast step against the reference runtime on the unfused chain, at the default opt level,
// in NCHW and in the blocked layout, at 1 and 2 threads.
TEST(ChannelAffine, FastStepEqualsTheReferenceInEveryLayout) {
  struct Case {
    int64_t ca, cb, hw;
    const char* act;
  };
  // 16-channel inputs block; 24 + 8 do not on AVX-512 (NCHW there); 7x7 planes leave tails;
  // 48x48 planes are split into several runs.
  const Case cases[] = {{16, 32, 7, "Relu"},     {32, 16, 14, "Clip"}, {24, 8, 5, "HardSwish"},
                        {16, 16, 3, "Sigmoid"},  {16, 48, 48, "Relu"}, {8, 40, 6, ""},
                        {3, 5, 9, "HardSigmoid"}};
  for (const Case& c : cases) {
    const Graph g = densenet_chain(c.ca, c.cb, c.hw, c.act, false, /*convs=*/true);
    const std::vector<Tensor> in = inputs_for(g);
    const bool whole_blocks = c.ca % 16 == 0 && c.cb % 16 == 0;
    const Tensor want = ReferenceExecutor(g).run(in)[0];
    for (LayoutMode layout : {LayoutMode::kNchw, LayoutMode::kNchwc})
      for (int threads : {1, 2}) {
        PlanOptions o;
        o.layout = layout;
        o.threads = threads;
        Plan plan(g, o);
        bool fused = false;
        for (const StepInfo& s : plan.steps()) {
          EXPECT_NE(s.kernel, "reference") << s.node;
          if (s.op != "ChannelAffine") continue;
          fused = true;
          // Blocked where the layout allows it and every input holds whole blocks (of 16 on
          // AVX-512, of 8 on AVX2: 16-multiples are whole blocks on both).
          if (layout == LayoutMode::kNchwc && whole_blocks && plan.isa() != Isa::kScalar)
            EXPECT_TRUE(is_blocked(s.layout)) << c.ca << "+" << c.cb;
          if (layout == LayoutMode::kNchw) EXPECT_EQ(s.layout, Layout::kNchw);
        }
        EXPECT_TRUE(fused);
        const Tensor got = plan.run(in)[0];
        // The convs' summation order, the vector sigmoid and FMAs against the reference's
        // multiply-adds: a few ulp of the output's scale.
        double scale = 1;
        for (int64_t i = 0; i < want.numel(); ++i)
          scale = std::max(scale, std::fabs(double(want.data<float>()[i])));
        EXPECT_LE(max_abs_diff(want, got), 1e-5 * scale)
            << c.ca << "+" << c.cb << " " << c.hw << "x" << c.hw << " " << c.act << " "
            << layout_mode_name(layout) << " t" << threads;
      }
  }
}

}  // namespace
}  // namespace dlas

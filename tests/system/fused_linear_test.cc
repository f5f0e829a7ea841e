// fuse_linear: a MatMul by constant weights with its bias Add, a residual Add (f32) and an
// activation (Gelu among them) becomes one FusedMatMul; the patterns it must leave alone
// stay; fold_linear_scale folds a layer scale after it (through a transpose) into its
// weights, f32 and int8, and leaves the Mul where it cannot; the fused layer compiles to the FC
// kernels (f32, native bf16, int8 with a GELU) with no reference step and equals the unfused graph
// within the plan tolerance.
//   build/dlas_tests --gtest_filter='FusedLinear*'
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "dlas/algo/fully_connected.h"
#include "dlas/hw/isa.h"
#include "dlas/optimize/compress_spec.h"
#include "dlas/system/compress.h"
#include "dlas/system/executor.h"
#include "dlas/system/passes.h"
#include "dlas/system/plan.h"
#include "system/plan_test_util.h"

namespace dlas {
namespace {

// x [1, 5, 7, K] -> MatMul(W [K, N]) -> Add(b [N]) -> [Add(r)] -> act -> y: a ConvNeXt-style
// Linear layer on channels-last activations, as exported. `act` is an ONNX op ("Gelu",
// "Relu") or empty; with a residual, r = Relu(x2) of a second input, computed after the
// MatMul in the node order.
Graph linear(int64_t k, int64_t n, bool residual, const std::string& act, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.f, 1.f);
  Graph g;
  g.inputs.push_back({"x", DType::kF32, {1, 5, 7, k}});
  std::vector<float> w(static_cast<size_t>(k * n)), b(static_cast<size_t>(n));
  for (float& v : w) v = dist(rng) / std::sqrt(static_cast<float>(k));
  for (float& v : b) v = dist(rng);
  g.initializers.emplace("w", Tensor::from_vector<float>({k, n}, w));
  g.initializers.emplace("b", Tensor::from_vector<float>({n}, b));
  g.nodes.push_back({"fc", "MatMul", {"x", "w"}, {"m"}, {}});
  std::string y = "c";
  g.nodes.push_back({"bias", "Add", {"m", "b"}, {"c"}, {}});
  if (residual) {
    g.inputs.push_back({"x2", DType::kF32, {1, 5, 7, n}});
    g.nodes.push_back({"r", "Relu", {"x2"}, {"r"}, {}});
    g.nodes.push_back({"res", "Add", {"r", y}, {"s"}, {}});
    y = "s";
  }
  if (!act.empty()) {
    g.nodes.push_back({"act", act, {y}, {"y"}, {}});
    y = "y";
  }
  g.outputs = {y};
  g.infer();
  return g;
}

TEST(FusedLinear, BiasAndGeluBecomeOneFusedMatMul) {
  Graph g = linear(24, 40, false, "Gelu", 1);
  const Graph before = g;
  EXPECT_EQ(fuse_linear(g), 1);
  ASSERT_EQ(ops_of(g), std::vector<std::string>{"FusedMatMul"});
  const Node& f = g.nodes[0];
  EXPECT_EQ(f.inputs, (std::vector<std::string>{"x", "w", "b"}));
  EXPECT_EQ(f.attr_string("activation", "none"), "gelu");
  EXPECT_EQ(f.outputs[0], "y");
  const auto in = seeded_inputs(before);
  expect_close(before, ReferenceExecutor(g).run(in), ReferenceExecutor(before).run(in),
               "reference");
}

TEST(FusedLinear, ResidualComputedAfterTheProductIsFused) {
  Graph g = linear(24, 40, true, "Relu", 2);
  const Graph before = g;
  EXPECT_EQ(fuse_linear(g), 1);
  // The Relu of the residual stays before the fused node, which reads it.
  ASSERT_EQ(ops_of(g), (std::vector<std::string>{"Relu", "FusedMatMul"}));
  const Node& f = g.nodes[1];
  EXPECT_EQ(f.inputs, (std::vector<std::string>{"x", "w", "b", "r"}));
  EXPECT_EQ(f.attr_string("activation", "none"), "relu");
  const auto in = seeded_inputs(before);
  expect_close(before, ReferenceExecutor(g).run(in), ReferenceExecutor(before).run(in),
               "reference");
}

TEST(FusedLinear, PatternsItCannotTakeStay) {
  {  // a bias of one value per row: nothing absorbed, the MatMul stays
    Graph g = linear(24, 40, false, "", 3);
    g.initializers["b"] = Tensor(DType::kF32, {7, 1});
    g.infer();
    EXPECT_EQ(fuse_linear(g), 0);
  }
  {  // the product is also a graph output: nothing after it is absorbed
    Graph g = linear(24, 40, false, "Gelu", 3);
    g.outputs.push_back("m");
    g.infer();
    EXPECT_EQ(fuse_linear(g), 0);
  }
  {  // weights computed at run time
    Graph g = linear(24, 40, false, "Gelu", 3);
    g.inputs.push_back({"wr", DType::kF32, {24, 40}});
    g.nodes[0].inputs[1] = "wr";
    g.infer();
    EXPECT_EQ(fuse_linear(g), 0);
  }
  {  // an Add of a differently shaped activation is no residual; the Gelu after it stays
    Graph g = linear(24, 40, true, "Gelu", 3);
    g.inputs[1].shape = {1, 1, 7, 40};
    g.infer();
    EXPECT_EQ(fuse_linear(g), 1);
    EXPECT_EQ(ops_of(g), (std::vector<std::string>{"FusedMatMul", "Relu", "Add", "Gelu"}));
  }
}

// x [1, 24, 5, 7] -> Transpose(0,2,3,1) -> MatMul(W [24, 24]) -> Add(b) [-> act] ->
// Transpose(0,3,1,2) -> Mul(gamma [24, 1, 1]) -> Add(x) -> y: a ConvNeXt block's tail with
// its layer scale, channels-first around a channels-last Linear layer.
Graph layer_scale_block(const std::string& act, const Shape& gamma_shape, float gamma_sign) {
  std::mt19937 rng(9);
  std::normal_distribution<float> dist(0.f, 1.f);
  Graph g;
  g.inputs.push_back({"x", DType::kF32, {1, 24, 5, 7}});
  std::vector<float> w(24 * 24), b(24), gamma(static_cast<size_t>(shape_numel(gamma_shape)));
  for (float& v : w) v = dist(rng) / 5.f;
  for (float& v : b) v = dist(rng);
  for (float& v : gamma) v = gamma_sign * (0.5f + std::fabs(dist(rng)));
  g.initializers.emplace("w", Tensor::from_vector<float>({24, 24}, w));
  g.initializers.emplace("b", Tensor::from_vector<float>({24}, b));
  g.initializers.emplace("gamma", Tensor::from_vector<float>(gamma_shape, gamma));
  Node t1{"t1", "Transpose", {"x"}, {"xt"}, {}};
  t1.attrs["perm"] = std::vector<int64_t>{0, 2, 3, 1};
  Node t2{"t2", "Transpose", {act.empty() ? "c" : "a"}, {"ct"}, {}};
  t2.attrs["perm"] = std::vector<int64_t>{0, 3, 1, 2};
  g.nodes = {t1, {"fc", "MatMul", {"xt", "w"}, {"m"}, {}}, {"bias", "Add", {"m", "b"}, {"c"}, {}}};
  if (!act.empty()) g.nodes.push_back({"act", act, {"c"}, {"a"}, {}});
  g.nodes.push_back(t2);
  g.nodes.push_back({"scale", "Mul", {"ct", "gamma"}, {"s"}, {}});
  g.nodes.push_back({"res", "Add", {"s", "x"}, {"y"}, {}});
  g.outputs = {"y"};
  g.infer();
  return g;
}

TEST(FusedLinear, LayerScaleFoldsIntoTheLinearLayer) {
  struct Case {
    std::string what, compress, act;
    Shape gamma;
    float sign;
    bool folds;
  };
  const Case cases[] = {
      {"f32", "dense", "", {24, 1, 1}, 1.f, true},
      {"f32 [1,C,1,1], negative", "dense", "", {1, 24, 1, 1}, -1.f, true},
      {"int8", "int8", "", {24, 1, 1}, 1.f, true},
      {"int8 negative: w_scale stays positive", "int8", "", {24, 1, 1}, -1.f, false},
      {"after a GELU", "dense", "Gelu", {24, 1, 1}, 1.f, false},
      {"per row, not per channel", "dense", "", {1, 5, 1}, 1.f, false},
  };
  for (const Case& c : cases) {
    Graph g = layer_scale_block(c.act, c.gamma, c.sign);
    if (c.compress == "int8") {
      QuantSpec qs = parse_quant_spec("int8");
      qs.calib_samples = 2;
      quantize(g, qs);
    }
    Graph opt = g;
    optimize_graph(opt, 3);
    int muls = 0;
    for (const Node& n : opt.nodes) muls += n.op == "Mul";
    EXPECT_EQ(muls, c.folds ? 0 : 1) << c.what;
    const auto in = seeded_inputs(g);
    const Tensor want = ReferenceExecutor(g).run(in)[0];
    PlanOptions o;
    o.threads = 2;
    Plan plan(g, o);
    for (const Tensor& got : {ReferenceExecutor(opt).run(in)[0], plan.run(in)[0]}) {
      ASSERT_EQ(got.shape(), want.shape()) << c.what;
      const auto [worst, scale] = worst_difference(want, got);
      EXPECT_LE(worst, 2e-5 * scale) << c.what;
    }
  }
}

// The fused layers compile to the FC kernels, no step on a reference kernel, and equal the
// unfused graph: f32 with a GELU (rows not a multiple of the tile, columns over several
// panels) and with a residual, bf16 with a GELU on the native bf16 tiles where the path has
// them, and int8 with the GELU in the int8 FC kernel's epilogue.
TEST(FusedLinear, CompilesToTheFcKernels) {
  struct Case {
    std::string what, compress;
    bool residual;
  };
  const Case cases[] = {
      {"f32 gelu", "dense", false},
      {"f32 residual gelu", "dense", true},
      {"bf16 gelu", "bf16", false},
      {"int8 gelu", "int8", false},
  };
  for (const Case& c : cases) {
    Graph g = linear(23, 70, c.residual, "Gelu", 5);
    const Graph f32 = g;
    if (c.compress != "dense") {
      QuantSpec qs = parse_quant_spec(c.compress);
      qs.calib_samples = 2;
      quantize(g, qs);
    }
    PlanOptions o;
    o.threads = 2;
    Plan plan(g, o);
    int fc = 0;
    for (const StepInfo& st : plan.steps()) {
      EXPECT_NE(st.kernel, "reference") << c.what << ": " << st.node << " (" << st.op << ")";
      EXPECT_NE(st.op, "Gelu") << c.what << ": the GELU was not fused";
      fc += st.kernel.rfind("fc", 0) == 0;
    }
    EXPECT_EQ(fc, 1) << c.what;
    const auto in = seeded_inputs(g);
    if (c.compress == "int8") {
      EXPECT_EQ(plan.pass_report().qfcs_fused, 1) << c.what;
      // Against the QDQ graph: the int8 product's f32 rounding and the GELU's vector form.
      const Tensor want = ReferenceExecutor(g).run(in)[0], got = plan.run(in)[0];
      ASSERT_EQ(got.shape(), want.shape());
      const auto [worst, scale] = worst_difference(want, got);
      EXPECT_LE(worst, 1e-4 * scale) << c.what;
      continue;
    }
    EXPECT_EQ(plan.pass_report().linears_fused, 1) << c.what;
    if (c.compress != "bf16") {
      expect_close(g, plan.run(in), ReferenceExecutor(g).run(in), c.what);
      continue;
    }
    if (PreparedFullyConnectedBf16::available(active_isa()))
      for (const StepInfo& st : plan.steps())
        if (st.op == "FusedMatMul") EXPECT_EQ(st.kernel, "fc[native-bf16]") << c.what;
    // Against the reference runtime on the fused graph (which also rounds once, where the
    // unfused bf16 graph rounds after each op): one bf16 unit of the value, plus the f32
    // sums' rounding against the output's scale.
    Graph fused = g;
    optimize_graph(fused, 3);
    const Tensor want = ReferenceExecutor(fused).run(in)[0], got = plan.run(in)[0];
    ASSERT_EQ(got.shape(), want.shape()) << c.what;
    EXPECT_EQ(count_far(want, got, 1.0 / 128, 1e-5), 0) << c.what;
  }
}

}  // namespace
}  // namespace dlas

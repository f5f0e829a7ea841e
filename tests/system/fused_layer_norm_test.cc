// fuse_layer_norm: a LayerNorm decomposed as PyTorch exports it below opset 17 (ReduceMean,
// Sub, Pow, ReduceMean, Add, Sqrt, Div, Mul, Add) becomes one LayerNormalization, with or
// without its affine; the patterns it must leave alone stay; and the fused node runs on the
// fast row kernel (f32, and bf16 through widened rows) within the plan tolerance of the
// unfused graph.
//   build/dlas_tests --gtest_filter='FusedLayerNorm*'
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "dlas/optimize/compress_spec.h"
#include "dlas/system/compress.h"
#include "dlas/system/executor.h"
#include "dlas/system/passes.h"
#include "dlas/system/plan.h"
#include "system/plan_test_util.h"

namespace dlas {
namespace {

// x [1, 6, 5, C] -> decomposed LayerNorm over C (eps 1e-6) [-> Mul gamma -> Add beta] -> y,
// then a Relu so the LayerNorm's output is an intermediate value.
Graph decomposed_layer_norm(int64_t c, bool affine) {
  std::mt19937 rng(7);
  std::normal_distribution<float> dist(0.f, 1.f);
  Graph g;
  g.inputs.push_back({"x", DType::kF32, {1, 6, 5, c}});
  std::vector<float> gamma(static_cast<size_t>(c)), beta(static_cast<size_t>(c));
  for (float& v : gamma) v = 1.f + 0.3f * dist(rng);
  for (float& v : beta) v = 0.3f * dist(rng);
  g.initializers.emplace("gamma", Tensor::from_vector<float>({c}, gamma));
  g.initializers.emplace("beta", Tensor::from_vector<float>({c}, beta));
  g.initializers.emplace("two", Tensor::scalar_f32(2.f));
  g.initializers.emplace("eps", Tensor::scalar_f32(1e-6f));
  Node m1{"m1", "ReduceMean", {"x"}, {"m"}, {}};
  m1.attrs["axes"] = std::vector<int64_t>{-1};
  Node m2{"m2", "ReduceMean", {"p"}, {"v"}, {}};
  m2.attrs["axes"] = std::vector<int64_t>{-1};
  g.nodes = {m1,
             {"sub", "Sub", {"x", "m"}, {"d"}, {}},
             {"pow", "Pow", {"d", "two"}, {"p"}, {}},
             m2,
             {"add", "Add", {"v", "eps"}, {"e"}, {}},
             {"sqrt", "Sqrt", {"e"}, {"s"}, {}},
             {"div", "Div", {"d", "s"}, {"n"}, {}}};
  std::string y = "n";
  if (affine) {
    g.nodes.push_back({"mul", "Mul", {"n", "gamma"}, {"a"}, {}});
    g.nodes.push_back({"shift", "Add", {"a", "beta"}, {"b"}, {}});
    y = "b";
  }
  g.nodes.push_back({"relu", "Relu", {y}, {"y"}, {}});
  g.outputs = {"y"};
  g.infer();
  return g;
}

// got against want: within `unit` of each value (one 16-bit rounding; 0 for f32) plus a few
// f32 roundings of the normalized values' scale (the row's sums in another order).
void expect_near_values(const Tensor& got, const Tensor& want, double unit,
                        const std::string& what) {
  ASSERT_EQ(got.shape(), want.shape()) << what;
  EXPECT_EQ(count_far(want, got, unit, 4e-6), 0) << what;
}

TEST(FusedLayerNorm, DecomposedLayerNormBecomesOneNode) {
  for (bool affine : {true, false}) {
    Graph g = decomposed_layer_norm(40, affine);
    const Graph before = g;
    EXPECT_EQ(fuse_layer_norm(g), 1) << affine;
    ASSERT_EQ(ops_of(g), (std::vector<std::string>{"LayerNormalization", "Relu"})) << affine;
    const Node& ln = g.nodes[0];
    EXPECT_EQ(ln.inputs[0], "x");
    EXPECT_EQ(ln.inputs.size(), affine ? 3u : 2u);  // Scale (ones without the affine) [, B]
    EXPECT_FLOAT_EQ(ln.attr_float("epsilon", 0.f), 1e-6f);
    const auto in = seeded_inputs(before);
    expect_near_values(ReferenceExecutor(g).run(in)[0], ReferenceExecutor(before).run(in)[0], 0,
                       affine ? "affine" : "plain");
  }
}

TEST(FusedLayerNorm, PatternsItCannotTakeStay) {
  {  // the mean over two axes is no LayerNorm over the last
    Graph g = decomposed_layer_norm(40, true);
    g.nodes[0].attrs["axes"] = std::vector<int64_t>{2, 3};
    g.nodes[3].attrs["axes"] = std::vector<int64_t>{2, 3};
    g.infer();
    EXPECT_EQ(fuse_layer_norm(g), 0);
  }
  {  // the deviation is also a graph output
    Graph g = decomposed_layer_norm(40, true);
    g.outputs.push_back("d");
    g.infer();
    EXPECT_EQ(fuse_layer_norm(g), 0);
  }
  {  // a cube, not a square
    Graph g = decomposed_layer_norm(40, true);
    g.initializers["two"] = Tensor::scalar_f32(3.f);
    EXPECT_EQ(fuse_layer_norm(g), 0);
  }
  {  // a per-row scale is not gamma: the LayerNorm fuses, the Mul and Add stay
    Graph g = decomposed_layer_norm(40, true);
    g.initializers["gamma"] = Tensor(DType::kF32, {5, 1});
    g.infer();
    EXPECT_EQ(fuse_layer_norm(g), 1);
    EXPECT_EQ(ops_of(g), (std::vector<std::string>{"LayerNormalization", "Mul", "Add", "Relu"}));
  }
}

TEST(FusedLayerNorm, RunsOnTheFastRowKernel) {
  for (const char* compress : {"dense", "bf16"}) {
    Graph g = decomposed_layer_norm(96, true);
    if (std::string(compress) == "bf16") quantize(g, parse_quant_spec("bf16"));
    PlanOptions o;
    o.threads = 2;
    Plan plan(g, o);
    int ln = 0;
    for (const StepInfo& st : plan.steps()) {
      EXPECT_NE(st.kernel, "reference") << compress << ": " << st.node << " (" << st.op << ")";
      if (st.op != "LayerNormalization") continue;
      ++ln;
      EXPECT_EQ(st.kernel.rfind("fast", 0), 0u) << compress << ": " << st.kernel;
    }
    EXPECT_EQ(ln, 1) << compress;
    const auto in = seeded_inputs(g);
    // Against the reference runtime on the fused graph (rounded once in bf16, where the
    // unfused bf16 graph rounds after each of its nine ops).
    Graph fused = g;
    optimize_graph(fused, 3);
    expect_near_values(plan.run(in)[0], ReferenceExecutor(fused).run(in)[0],
                       std::string(compress) == "bf16" ? 1.0 / 128 : 0.0, compress);
  }
}

}  // namespace
}  // namespace dlas

// fuse_quantized_fc: a QDQ Linear layer (MatMul or Gemm on DequantizeLinear'd 8-bit
// activations and per-column s8 weights) becomes one QFc with its bias Add and Relu / Clip;
// the patterns it must leave alone stay; and dlas quantize's int8 Linear layers compile to
// the int8 FC kernel, equal bit for bit to the reference runtime's QFc and within the
// rounding of f32 sums of the unfused QDQ graph.
//   build/dlas_tests --gtest_filter='QuantizedFc*'
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
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

// x (u8 [1, 6, 6, 40], zero point 131) -> DQ -> MatMul(W: s8 [40, 50] per column, DQ) ->
// Add(bias [50]) -> Relu -> y: a Linear layer on channels-last activations as exported.
Graph qdq_linear() {
  constexpr int64_t k = 40, n = 50;
  std::mt19937 rng(11);
  Graph g;
  g.inputs.push_back({"x", DType::kU8, {1, 6, 6, k}});
  g.initializers.emplace("xs", Tensor::scalar_f32(0.037f));
  g.initializers.emplace("xz", Tensor::from_vector<uint8_t>({}, {131}));
  std::vector<int8_t> w(k * n);
  for (int8_t& v : w) v = static_cast<int8_t>(static_cast<int>(rng() % 255) - 127);
  std::vector<float> ws(n), b(n);
  for (int64_t j = 0; j < n; ++j) {
    ws[j] = 0.001f * static_cast<float>(1 + rng() % 50);
    b[j] = 0.01f * static_cast<float>(static_cast<int>(rng() % 201) - 100);
  }
  g.initializers.emplace("wq", Tensor::from_vector<int8_t>({k, n}, w));
  g.initializers.emplace("ws", Tensor::from_vector<float>({n}, ws));
  g.initializers.emplace("wz", Tensor(DType::kS8, {n}));
  g.initializers.emplace("b", Tensor::from_vector<float>({n}, b));
  Node dqw{"dqw", "DequantizeLinear", {"wq", "ws", "wz"}, {"w"}, {}};
  dqw.attrs["axis"] = int64_t{1};
  g.nodes.push_back({"dq", "DequantizeLinear", {"x", "xs", "xz"}, {"a"}, {}});
  g.nodes.push_back(dqw);
  g.nodes.push_back({"fc", "MatMul", {"a", "w"}, {"m"}, {}});
  g.nodes.push_back({"add", "Add", {"m", "b"}, {"c"}, {}});
  g.nodes.push_back({"relu", "Relu", {"c"}, {"y"}, {}});
  g.outputs = {"y"};
  g.infer();
  return g;
}

Tensor random_bytes(const Shape& s, uint32_t seed) {
  std::mt19937 rng(seed);
  Tensor x(DType::kU8, s);
  for (int64_t i = 0; i < x.numel(); ++i) x.data<uint8_t>()[i] = static_cast<uint8_t>(rng());
  return x;
}

TEST(QuantizedFc, LinearWithBiasAndReluBecomesOneQFc) {
  Graph g = qdq_linear();
  const Graph before = g;
  EXPECT_EQ(fuse_quantized_fc(g), 1);
  ASSERT_EQ(ops_of(g), std::vector<std::string>{"QFc"});
  const Node& q = g.nodes[0];
  EXPECT_EQ(q.inputs[0], "x");
  EXPECT_EQ(q.inputs[1], "wq");
  EXPECT_EQ(q.inputs.size(), 3u);  // the bias
  EXPECT_EQ(q.attr_string("activation", "none"), "relu");
  EXPECT_EQ(q.attr_int("x_zero_point", 0), 131);
  EXPECT_EQ(q.outputs[0], "y");
  EXPECT_EQ(g.value("y").shape, (Shape{1, 6, 6, 50}));
  EXPECT_EQ(g.value("y").dtype, DType::kF32);
  // The exact int8 product against the float graph's sums of dequantized products: equal up
  // to f32 rounding, and the Relu applied (some outputs clamped, some not).
  const Tensor x = random_bytes({1, 6, 6, 40}, 4);
  const Tensor want = ReferenceExecutor(before).run({x})[0];
  const Tensor got = ReferenceExecutor(g).run({x})[0];
  const auto [worst, scale] = worst_difference(want, got);
  EXPECT_LE(worst, 1e-5 * scale);
  int zeros = 0;
  for (int64_t i = 0; i < got.numel(); ++i) zeros += got.data<float>()[i] == 0.f;
  EXPECT_GT(zeros, 0);
  EXPECT_LT(zeros, got.numel() / 2 + got.numel() / 4);
}

TEST(QuantizedFc, PatternsItCannotTakeStay) {
  {  // weights with a nonzero zero point
    Graph g = qdq_linear();
    g.initializers["wz"].data<int8_t>()[3] = 1;
    EXPECT_EQ(fuse_quantized_fc(g), 0);
  }
  {  // a bias that is not per column (one per row) stays an Add, the Relu with it
    Graph g = qdq_linear();
    g.initializers["b"] = Tensor(DType::kF32, {6, 1});
    g.infer();
    EXPECT_EQ(fuse_quantized_fc(g), 1);
    EXPECT_EQ(ops_of(g), (std::vector<std::string>{"QFc", "Add", "Relu"}));
  }
  {  // the product is also a graph output: its Add and Relu stay
    Graph g = qdq_linear();
    g.outputs.push_back("m");
    g.infer();
    EXPECT_EQ(fuse_quantized_fc(g), 1);
    EXPECT_EQ(ops_of(g), (std::vector<std::string>{"QFc", "Add", "Relu"}));
    EXPECT_EQ(g.nodes[0].outputs[0], "m");
  }
  {  // float activations: nothing to fuse
    Graph g = qdq_linear();
    g.nodes[2].inputs[0] = "f";
    g.inputs.push_back({"f", DType::kF32, {1, 6, 6, 40}});
    g.infer();
    EXPECT_EQ(fuse_quantized_fc(g), 0);
  }
}

// dlas quantize's int8 Linear layers: a MatMul of channels-last activations with its bias
// Add and a Relu (rows not a multiple of the tile's, an odd reduction length, columns over
// several panels), a Gemm with transB and a bias, and a batch-1 classifier compile to the
// int8 FC kernel, each output equal to the reference runtime's QFc and close to the float
// QDQ graph.
TEST(QuantizedFc, QuantizedLinearLayersRunOnTheInt8Kernel) {
  if (!PreparedFullyConnectedQs8::available(active_isa()))
    GTEST_SKIP() << "no int8 FC kernel on this ISA path";
  std::mt19937 rng(3);
  struct Case {
    std::string what, op;
    Shape x, w;
    bool trans_b, bias, relu;
  };
  const Case cases[] = {
      {"MatMul channels-last", "MatMul", {1, 5, 7, 23}, {23, 70}, false, true, true},
      {"Gemm transB bias", "Gemm", {31, 64}, {40, 64}, true, true, false},
      {"batch-1 classifier", "Gemm", {1, 64}, {64, 10}, false, true, false},
  };
  for (const Case& c : cases) {
    Graph g = linear_layer_graph(c.op, c.x, c.w, c.trans_b, c.bias, c.relu, rng);
    QuantSpec qs = parse_quant_spec("int8");
    qs.calib_samples = 2;
    quantize(g, qs);
    PlanOptions o;
    o.threads = 2;
    Plan plan(g, o);
    int fc_steps = 0;
    for (const StepInfo& st : plan.steps()) {
      EXPECT_NE(st.kernel, "reference") << c.what << ": " << st.node << " (" << st.op << ")";
      if (st.op != "QFc") continue;
      ++fc_steps;
      EXPECT_EQ(st.kernel, "fc") << c.what;
      EXPECT_EQ(st.compute, "int8") << c.what;
    }
    EXPECT_EQ(fc_steps, 1) << c.what;
    EXPECT_EQ(plan.pass_report().qfcs_fused, 1) << c.what;
    const auto in = seeded_inputs(g);
    Graph fused = g;
    optimize_graph(fused, 3);
    const Tensor exact = ReferenceExecutor(fused).run(in)[0];
    const Tensor got = plan.run(in)[0];
    ASSERT_EQ(got.shape(), exact.shape()) << c.what;
    ASSERT_EQ(got.nbytes(), exact.nbytes()) << c.what;
    EXPECT_EQ(std::memcmp(got.raw(), exact.raw(), got.nbytes()), 0) << c.what;
    const Tensor qdq = ReferenceExecutor(g).run(in)[0];
    const auto [worst, scale] = worst_difference(qdq, got);
    EXPECT_LE(worst, 1e-4 * scale) << c.what;
    EXPECT_GT(scale, 0) << c.what;
  }
}

}  // namespace
}  // namespace dlas

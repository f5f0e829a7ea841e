// The compiled engine against the reference runtime: graph passes preserve
// results, every zoo model x conv algorithm gives the reference outputs, the
// memory planner never overlaps live buffers, and bad layer choices are clear errors.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <map>
#include <random>

#include "dlas/algo/conv.h"
#include "dlas/model/zoo.h"
#include "dlas/system/executor.h"
#include "dlas/system/passes.h"
#include "dlas/system/plan.h"
#include "system/plan/memory_plan.h"
#include "system/plan_test_util.h"

namespace dlas {
namespace {

class PlanZoo : public ::testing::TestWithParam<std::string> {};

TEST_P(PlanZoo, PassesPreserveResults) {
  const Graph g = small_zoo_model(GetParam());
  const auto in = seeded_inputs(g);
  const auto want = ReferenceExecutor(g).run(in);
  Graph opt = g;
  const PassReport r = optimize_graph(opt, 3);
  EXPECT_LT(r.nodes_after, r.nodes_before);
  // Every BatchNorm right after a conv is folded (DenseNet's pre-activation BNs after a
  // Concat stay).
  std::map<std::string, std::string> producer;
  for (const Node& n : opt.nodes) producer[n.outputs[0]] = n.op;
  for (const Node& n : opt.nodes) {
    if (n.op != "BatchNormalization") continue;
    EXPECT_TRUE(producer[n.inputs[0]] != "Conv" && producer[n.inputs[0]] != "FusedConv")
        << n.name << " was not folded";
  }
  expect_close(g, ReferenceExecutor(opt).run(in), want, GetParam() + " optimized");
}

// The plan with every --conv-algo (and auto), on 2 threads, against the reference runtime.
void expect_every_algorithm_matches(const Graph& g, const std::string& what) {
  const auto in = seeded_inputs(g);
  const auto want = ReferenceExecutor(g).run(in);
  std::vector<std::string> algos = {"auto"};
  for (const ConvAlgorithm* a : conv_algorithms()) algos.emplace_back(a->name());
  for (const std::string& algo : algos) {
    PlanOptions o;
    o.conv_algo = algo;
    o.threads = 2;
    Plan plan(g, o);
    expect_close(g, plan.run(in), want, what + " --conv-algo " + algo);
  }
}

TEST_P(PlanZoo, EveryAlgorithmMatchesTheReference) {
  expect_every_algorithm_matches(small_zoo_model(GetParam()), GetParam());
}

INSTANTIATE_TEST_SUITE_P(Zoo, PlanZoo, zoo_model_params(), zoo_param_name);

TEST(PlanBatch, BatchAboveOneMatchesTheReferenceForEveryAlgorithm) {
  for (const char* model : {"mobilenetv2-cifar", "resnet18-cifar"})
    expect_every_algorithm_matches(build_zoo_model(model, {.batch = 2}),
                                   std::string(model) + " batch 2");
}

// A graph of one node: op(x, c), x an f32 input of shape xs, c a constant.
Graph one_node_graph(const std::string& op, const Shape& xs, Tensor c) {
  Graph g;
  g.inputs.push_back({"x", DType::kF32, xs});
  g.initializers.emplace("c", std::move(c));
  g.nodes.push_back({op, op, {"x", "c"}, {"y"}, {}});
  g.outputs = {"y"};
  g.infer();
  return g;
}

// A graph of the one node n, reading an f32 input "x" of shape xs and the constants given.
Graph graph_of(const Node& n, const Shape& xs, std::map<std::string, Tensor> constants = {}) {
  Graph g;
  g.inputs.push_back({"x", DType::kF32, xs});
  for (auto& [name, t] : constants) g.initializers.emplace(name, std::move(t));
  g.nodes.push_back(n);
  g.outputs = n.outputs;
  g.infer();
  return g;
}

// The one-node graph compiled at 2 threads: its one step runs on `kernel`; returns the
// plan's output and the reference runtime's on seeded inputs.
std::pair<Tensor, Tensor> compiled_and_reference(const Graph& g, const std::string& kernel,
                                                 const std::string& what) {
  PlanOptions o;
  o.threads = 2;
  Plan plan(g, o);
  EXPECT_EQ(plan.steps().size(), 1u) << what;
  EXPECT_EQ(plan.steps().at(0).kernel, kernel) << what;
  const std::vector<Tensor> in = seeded_inputs(g);
  return {plan.run(in)[0], ReferenceExecutor(g).run(in)[0]};
}

// A Linear layer on channels-last activations (ConvNeXt's blocks): MatMul of a [1,H,W,K]
// input with a constant [K,N] matrix runs on the packed FC kernel with the leading
// dimensions as rows, equal to the reference; a 2-D input still does, a runtime right-hand
// side does not.
TEST(PlanFc, MatMulOfAnyRankInputRunsOnTheFcKernel) {
  std::mt19937 rng(3);
  std::normal_distribution<float> dist(0.f, 1.f);
  std::vector<float> w(24 * 40);
  for (float& v : w) v = dist(rng);
  for (const Shape& xs : {Shape{1, 5, 7, 24}, Shape{3, 24}, Shape{2, 9, 24}}) {
    const std::string what = std::to_string(xs.size()) + "-D input";
    const auto [got, want] = compiled_and_reference(
        one_node_graph("MatMul", xs, Tensor::from_vector<float>({24, 40}, w)), "fc", what);
    ASSERT_EQ(got.shape(), want.shape());
    double err = 0, scale = 0;
    for (int64_t i = 0; i < want.numel(); ++i) {
      err = std::max(err, double(std::abs(got.data<float>()[i] - want.data<float>()[i])));
      scale = std::max(scale, double(std::abs(want.data<float>()[i])));
    }
    EXPECT_LE(err, 1e-5 * scale) << what;
  }
  Graph g;  // both operands at run time: not a weight matrix to pack
  g.inputs.push_back({"a", DType::kF32, {1, 4, 8}});
  g.inputs.push_back({"b", DType::kF32, {8, 3}});
  g.nodes.push_back({"mm", "MatMul", {"a", "b"}, {"y"}, {}});
  g.outputs = {"y"};
  g.infer();
  PlanOptions o;
  Plan plan(g, o);
  EXPECT_NE(plan.steps()[0].kernel, "fc");
}

// Pow(x, 2) (a decomposed LayerNorm's variance) runs as x * x on the fast binary kernel,
// bit for bit the reference's power; another exponent stays on the reference kernel.
TEST(PlanElementwise, PowOfTwoIsASquareOnTheFastPath) {
  for (float p : {2.f, 3.f}) {
    const std::string what = "exponent " + std::to_string(p);
    const auto [got, want] =
        compiled_and_reference(one_node_graph("Pow", {1, 6, 9, 13}, Tensor::scalar_f32(p)),
                               p == 2.f ? "fast" : "reference", what);
    ASSERT_EQ(got.nbytes(), want.nbytes());
    EXPECT_EQ(std::memcmp(got.raw(), want.raw(), want.nbytes()), 0) << what;
  }
}

// ReduceMean over trailing axes (a decomposed LayerNorm's mean over the last axis, a mean over
// H and W) runs as a global average of each row on the fast pooling kernel, equal to the
// reference within f32 summation error, the axes given as an attribute (keepdims 1 and 0)
// or as an input; a reduced axis before the trailing run stays on the reference kernel.
TEST(PlanReduce, MeanOverTrailingAxesRunsOnTheFastPool) {
  struct Case {
    std::vector<int64_t> axes;
    int64_t keepdims;
    bool as_input;
    std::string kernel;
  };
  const Case cases[] = {{{-1}, 1, false, "fast"},     {{2, 3}, 0, false, "fast"},
                        {{3}, 1, true, "fast"},       {{1, 2, 3}, 1, true, "fast"},
                        {{1}, 1, false, "reference"}, {{1, 3}, 1, false, "reference"}};
  for (const Case& c : cases) {
    std::string what = "axes";
    for (int64_t a : c.axes) what += " " + std::to_string(a);
    Node n{"mean", "ReduceMean", {"x"}, {"y"}, {}};
    n.attrs["keepdims"] = c.keepdims;
    std::map<std::string, Tensor> constants;
    if (c.as_input) {
      constants.emplace(
          "axes", Tensor::from_vector<int64_t>({static_cast<int64_t>(c.axes.size())}, c.axes));
      n.inputs.push_back("axes");
    } else {
      n.attrs["axes"] = c.axes;
    }
    const auto [got, want] =
        compiled_and_reference(graph_of(n, {2, 5, 7, 96}, std::move(constants)), c.kernel, what);
    ASSERT_EQ(got.shape(), want.shape()) << what;
    for (int64_t i = 0; i < want.numel(); ++i)
      EXPECT_NEAR(got.data<float>()[i], want.data<float>()[i], 1e-5) << what << " at " << i;
  }
}

// The data-movement ops run as fast box copies on every element type -- f32, bf16 and u8
// behind Casts -- bit for bit the reference's: Transposes (ConvNeXt's NCHW <-> NHWC permutes,
// a 2-D transpose, axes of extent 1, a ShuffleNet channel shuffle, a permutation of three
// runs, the identity), Slices (a channel range, strided and reversed axes, an empty one) and
// constant Pads (zero and non-zero values, every axis); a Pad that crops (negative pads) or
// reflects stays on the reference kernel.
TEST(PlanMovement, TransposeSliceAndPadAreFastBoxCopiesOfAnyType) {
  auto ints = [](std::vector<int64_t> v) {
    return Tensor::from_vector<int64_t>({static_cast<int64_t>(v.size())}, v);
  };
  auto transpose = [](std::vector<int64_t> perm) {
    Node n{"op", "Transpose", {"x"}, {"y"}, {}};
    n.attrs["perm"] = perm;
    return n;
  };
  struct Case {
    std::string what;
    Node node;
    Shape x;
    std::map<std::string, Tensor> constants;  // 16-bit / 8-bit ones cast per type
    std::string kernel;
  };
  std::vector<Case> cases = {
      {"nchw->nhwc", transpose({0, 2, 3, 1}), {2, 24, 7, 9}, {}, "fast"},
      {"nhwc->nchw", transpose({0, 3, 1, 2}), {2, 7, 9, 24}, {}, "fast"},
      {"2-D", transpose({1, 0}), {37, 70}, {}, "fast"},
      {"3-D", transpose({2, 0, 1}), {5, 6, 33}, {}, "fast"},
      {"extent-1 axes", transpose({0, 3, 2, 1}), {1, 40, 1, 35}, {}, "fast"},
      {"channel shuffle", transpose({0, 2, 1, 3, 4}), {2, 2, 6, 5, 7}, {}, "fast"},
      {"three runs", transpose({0, 3, 2, 1}), {3, 4, 5, 6}, {}, "fast"},
      {"identity", transpose({0, 1, 2, 3}), {2, 3, 4, 5}, {}, "fast"},
      {"channel slice",
       {"op", "Slice", {"x", "s", "e", "a"}, {"y"}, {}},
       {2, 12, 5, 7},
       {{"s", ints({3})}, {"e", ints({9})}, {"a", ints({1})}},
       "fast"},
      {"strided and reversed slice",
       {"op", "Slice", {"x", "s", "e", "a", "t"}, {"y"}, {}},
       {2, 3, 9, 8},
       {{"s", ints({1, 6})}, {"e", ints({100, -100})}, {"a", ints({2, -1})}, {"t", ints({3, -2})}},
       "fast"},
      {"empty slice",
       {"op", "Slice", {"x", "s", "e"}, {"y"}, {}},
       {4, 5},
       {{"s", ints({2})}, {"e", ints({2})}},
       "fast"},
      {"zero pad",
       {"op", "Pad", {"x", "p"}, {"y"}, {}},
       {2, 3, 5, 7},
       {{"p", ints({0, 0, 1, 2, 0, 0, 2, 1})}},
       "fast"},
      {"valued pad on every axis",
       {"op", "Pad", {"x", "p", "v"}, {"y"}, {}},
       {2, 3, 5, 7},
       {{"p", ints({1, 2, 0, 3, 0, 1, 1, 0})}, {"v", Tensor::scalar_f32(1.5f)}},
       "fast"},
      {"cropping pad",
       {"op", "Pad", {"x", "p"}, {"y"}, {}},
       {2, 3, 5, 7},
       {{"p", ints({0, 0, -1, 2, 0, 0, 2, -1})}},
       "reference"},
  };
  Node reflect{"op", "Pad", {"x", "p"}, {"y"}, {}};
  reflect.attrs["mode"] = std::string("reflect");
  cases.push_back(
      {"reflect pad", reflect, {1, 2, 5, 7}, {{"p", ints({0, 0, 1, 2, 0, 0, 2, 1})}}, "reference"});
  for (const DType t : {DType::kF32, DType::kBF16, DType::kU8})
    for (const Case& c : cases) {
      const std::string what = c.what + " " + dtype_name(t);
      Graph g;
      g.inputs.push_back({"xf", DType::kF32, c.x});
      Node in{"in", "Cast", {"xf"}, {"x"}, {}};
      in.attrs["to"] = static_cast<int64_t>(dtype_to_onnx(t));
      Node out{"out", "Cast", {"y"}, {"yf"}, {}};
      out.attrs["to"] = static_cast<int64_t>(dtype_to_onnx(DType::kF32));
      g.nodes = {in, c.node, out};
      for (const auto& [name, v] : c.constants)
        g.initializers.emplace(name, v.dtype() == DType::kF32 ? v.cast(t) : v);
      g.outputs = {"yf"};
      g.infer();
      PlanOptions o;
      o.threads = 2;
      Plan plan(g, o);
      for (const StepInfo& s : plan.steps())
        if (s.node == "op") EXPECT_EQ(s.kernel, c.kernel) << what;
      const std::vector<Tensor> x = seeded_inputs(g);
      const Tensor got = plan.run(x)[0], want = ReferenceExecutor(g).run(x)[0];
      ASSERT_EQ(got.shape(), want.shape()) << what;
      EXPECT_EQ(std::memcmp(got.raw(), want.raw(), want.nbytes()), 0) << what;
    }
}

TEST(PlanPasses, ResNet18CifarFusesEveryBatchNormResidualAndRelu) {
  Graph g = build_zoo_model("resnet18-cifar");
  const PassReport r = optimize_graph(g, 3);
  EXPECT_EQ(r.batchnorms_folded, 20);  // 17 3x3/stem convs + 3 downsample 1x1
  EXPECT_EQ(r.residuals_fused, 8);     // one per BasicBlock
  EXPECT_EQ(r.activations_fused, 17);  // stem + 2 per block (the second after the add)
  int convs = 0;
  for (const Node& n : g.nodes) convs += n.op == "FusedConv" || n.op == "Conv";
  EXPECT_EQ(convs, 20);
}

TEST(PlanPasses, OptLevelsSwitchPassesOff) {
  for (int level = 0; level <= 3; ++level) {
    Graph g = build_zoo_model("mobilenetv2-cifar");
    const PassReport r = optimize_graph(g, level);
    EXPECT_EQ(r.batchnorms_folded > 0, level >= 2) << level;
    EXPECT_EQ(r.activations_fused > 0, level >= 3) << level;
  }
}

TEST(PlanPasses, EfficientNetSiluFuses) {
  Graph g = build_zoo_model("efficientnetb0", {.image_size = 64});
  optimize_graph(g, 3);
  int silu = 0;
  for (const Node& n : g.nodes) silu += n.attr_string("activation", "") == "silu";
  EXPECT_GT(silu, 30);
}

// A constant zero Pad of H and W folds into the AveragePool (counting the padding, as the
// pool averaged the padded zeros) or the Conv that reads it, which then pads itself; a Pad
// with a non-zero value, one of the channel axis, one before a MaxPool (whose padding is
// -inf, not zero) or one read twice stays. Either way the plan matches the reference.
TEST(PlanPasses, ZeroSpatialPadFoldsIntoTheAveragePoolOrConvReadingIt) {
  struct Case {
    std::string what, consumer;
    std::vector<int64_t> pads;
    float value;
    bool read_twice, folds;
  };
  const Case cases[] = {
      {"pad -> avgpool", "AveragePool", {0, 0, 1, 1, 0, 0, 1, 1}, 0.f, false, true},
      {"asymmetric pad -> conv", "Conv", {0, 0, 2, 0, 0, 0, 1, 3}, 0.f, false, true},
      {"valued pad -> avgpool", "AveragePool", {0, 0, 1, 1, 0, 0, 1, 1}, 0.5f, false, false},
      {"channel pad -> conv", "Conv", {0, 1, 1, 1, 0, 0, 1, 1}, 0.f, false, false},
      {"pad -> maxpool", "MaxPool", {0, 0, 1, 1, 0, 0, 1, 1}, 0.f, false, false},
      {"pad read twice", "AveragePool", {0, 0, 1, 1, 0, 0, 1, 1}, 0.f, true, false},
  };
  std::mt19937 rng(5);
  std::normal_distribution<float> dist(0.f, 0.5f);
  for (const Case& c : cases) {
    Graph g;
    g.inputs.push_back({"x", DType::kF32, {1, 8, 9, 9}});
    g.initializers.emplace("pads", Tensor::from_vector<int64_t>({8}, c.pads));
    g.initializers.emplace("value", Tensor::scalar_f32(c.value));
    g.nodes.push_back({"pad", "Pad", {"x", "pads", "value"}, {"p"}, {}});
    Node consumer{"consumer", c.consumer, {"p"}, {"y"}, {}};
    if (c.consumer == "Conv") {
      const int64_t in = c.pads[1] ? 9 : 8;
      std::vector<float> w(static_cast<size_t>(16 * in * 9));
      for (float& v : w) v = dist(rng);
      g.initializers.emplace("w", Tensor::from_vector<float>({16, in, 3, 3}, w));
      consumer.inputs.push_back("w");
    } else {
      consumer.attrs["kernel_shape"] = std::vector<int64_t>{3, 3};
    }
    g.nodes.push_back(consumer);
    g.outputs = {"y"};
    if (c.read_twice) {
      g.nodes.push_back({"relu", "Relu", {"p"}, {"r"}, {}});
      g.outputs.push_back("r");
    }
    g.infer();
    Graph opt = g;
    optimize_graph(opt, 2);
    int pads = 0;
    for (const Node& n : opt.nodes) pads += n.op == "Pad";
    EXPECT_EQ(pads, c.folds ? 0 : 1) << c.what;
    PlanOptions o;
    o.threads = 2;
    Plan plan(g, o);
    const auto in = seeded_inputs(g);
    expect_close(g, plan.run(in), ReferenceExecutor(g).run(in), c.what);
  }
}

// Kernel taps that only ever read a conv's zero padding are dropped: a 3x3 conv on a 1x1
// plane becomes 1x1, a 1x3 one on a one-pixel row too, a strided 3x3 on a 2x2 plane loses
// its first row and column of taps, a 3x3 on a 2x2 plane keeps all nine; the output shape
// and values stay the reference's.
TEST(PlanPasses, TapsThatReadOnlyPaddingAreTrimmed) {
  struct Case {
    std::string what;
    Shape x;
    int64_t kh, kw, stride;
    std::vector<int64_t> pads;
    std::vector<int64_t> kernel_after;
  };
  const Case cases[] = {
      {"3x3 on 1x1", {1, 24, 1, 1}, 3, 3, 1, {1, 1, 1, 1}, {1, 1}},
      {"1x3 on 1x1", {1, 24, 1, 1}, 1, 3, 1, {0, 1, 0, 1}, {1, 1}},
      {"strided 3x3 on 2x2", {1, 24, 2, 2}, 3, 3, 2, {1, 1, 1, 1}, {2, 2}},
      {"3x3 on 2x2", {1, 24, 2, 2}, 3, 3, 1, {1, 1, 1, 1}, {3, 3}},
  };
  std::mt19937 rng(9);
  std::normal_distribution<float> dist(0.f, 0.5f);
  for (const Case& c : cases) {
    Graph g;
    g.inputs.push_back({"x", DType::kF32, c.x});
    std::vector<float> w(static_cast<size_t>(32 * 24 * c.kh * c.kw));
    for (float& v : w) v = dist(rng);
    g.initializers.emplace("w", Tensor::from_vector<float>({32, 24, c.kh, c.kw}, w));
    Node conv{"conv", "Conv", {"x", "w"}, {"y"}, {}};
    conv.attrs["pads"] = c.pads;
    conv.attrs["strides"] = std::vector<int64_t>{c.stride, c.stride};
    g.nodes = {conv};
    g.outputs = {"y"};
    g.infer();
    Graph opt = g;
    optimize_graph(opt, 2);
    ASSERT_EQ(opt.nodes.size(), 1u) << c.what;
    const Shape& wt = opt.value(opt.nodes[0].inputs[1]).shape;
    EXPECT_EQ((std::vector<int64_t>{wt[2], wt[3]}), c.kernel_after) << c.what;
    EXPECT_EQ(opt.value("y").shape, g.value("y").shape) << c.what;
    EXPECT_EQ(opt.initializers.size(), 1u) << c.what;  // the untrimmed weights dropped
    PlanOptions o;
    o.threads = 2;
    Plan plan(g, o);
    const auto in = seeded_inputs(g);
    expect_close(g, plan.run(in), ReferenceExecutor(g).run(in), c.what);
  }
}

// HardSwish as exporters write it below opset 14 (MobileNetV3): y = conv(x), z = y *
// HardSigmoid(y) with alpha 1/6 and beta 1/2, the Mul's operands in either order, fuses into
// the conv as "hardswish" and matches the reference; a HardSigmoid with other constants, or
// one whose output is read elsewhere too, stays.
TEST(PlanPasses, HardSigmoidTimesItsInputFusesAsHardSwish) {
  struct Case {
    float alpha;
    bool gate_first, gate_read_twice;
    bool fuses;
  };
  const Case cases[] = {{1.f / 6.f, false, false, true},
                        {1.f / 6.f, true, false, true},
                        {0.2f, false, false, false},
                        {1.f / 6.f, false, true, false}};
  std::mt19937 rng(7);
  std::normal_distribution<float> dist(0.f, 0.5f);
  for (const Case& c : cases) {
    const std::string what = "alpha " + std::to_string(c.alpha) +
                             (c.gate_first ? ", gate first" : "") +
                             (c.gate_read_twice ? ", gate read twice" : "");
    Graph g;
    g.inputs.push_back({"x", DType::kF32, {1, 8, 10, 10}});
    std::vector<float> w(16 * 8 * 9), b(16);
    for (float& v : w) v = dist(rng);
    for (float& v : b) v = dist(rng);
    g.initializers.emplace("w", Tensor::from_vector<float>({16, 8, 3, 3}, w));
    g.initializers.emplace("b", Tensor::from_vector<float>({16}, b));
    Node conv{"conv", "Conv", {"x", "w", "b"}, {"y"}, {}};
    conv.attrs["pads"] = std::vector<int64_t>{1, 1, 1, 1};
    Node gate{"gate", "HardSigmoid", {"y"}, {"s"}, {}};
    gate.attrs["alpha"] = c.alpha;
    gate.attrs["beta"] = 0.5f;
    g.nodes = {conv, gate};
    g.nodes.push_back(
        {"mul",
         "Mul",
         c.gate_first ? std::vector<std::string>{"s", "y"} : std::vector<std::string>{"y", "s"},
         {"z"},
         {}});
    g.outputs = {"z"};
    if (c.gate_read_twice) {
      g.nodes.push_back({"relu", "Relu", {"s"}, {"r"}, {}});
      g.outputs.push_back("r");
    }
    g.infer();
    Graph opt = g;
    optimize_graph(opt, 3);
    int hardswish = 0;
    for (const Node& n : opt.nodes) hardswish += n.attr_string("activation", "") == "hardswish";
    EXPECT_EQ(hardswish, c.fuses ? 1 : 0) << what;
    EXPECT_EQ(opt.nodes.size(), c.fuses ? 1u : g.nodes.size()) << what;
    PlanOptions o;
    o.threads = 2;
    Plan plan(g, o);
    const auto in = seeded_inputs(g);
    expect_close(g, plan.run(in), ReferenceExecutor(g).run(in), what);
  }
}

// Elementwise results against the reference: the vector erf is within 1.5e-7 of erf, so a
// GELU output is within that much times |x|, plus rounding.
void expect_elementwise_close(const std::vector<Tensor>& got, const std::vector<Tensor>& want,
                              const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t o = 0; o < got.size(); ++o)
    for (int64_t i = 0; i < got[o].numel(); ++i) {
      const float a = got[o].data<float>()[i], b = want[o].data<float>()[i];
      ASSERT_LE(std::fabs(a - b), 1e-6f * (1.f + std::fabs(b)))
          << what << " output " << o << "[" << i << "]";
    }
}

// GELU as PyTorch exports it before opset 20: Mul(Mul(x, Add(Erf(Div(x, sqrt 2)), 1)), 0.5),
// operands in either order, fuses into one Gelu node whose plan equals the unfused plan within
// the erf approximation (1.5e-7 |x|) and the reference; another divisor,
// or an intermediate read elsewhere, stays. An ONNX Gelu node runs the same kernel; its tanh
// approximation is refused with one error.
TEST(PlanPasses, DecomposedGeluFusesIntoOneGeluStep) {
  struct Case {
    float divisor;
    bool swapped, intermediate_read_twice;
    bool fuses;
  };
  const float sqrt2 = static_cast<float>(std::sqrt(2.0));
  const Case cases[] = {{sqrt2, false, false, true},
                        {sqrt2, true, false, true},
                        {1.5f, false, false, false},
                        {sqrt2, false, true, false}};
  for (const Case& c : cases) {
    const std::string what = "divisor " + std::to_string(c.divisor) +
                             (c.swapped ? ", operands swapped" : "") +
                             (c.intermediate_read_twice ? ", erf read twice" : "");
    Graph g;
    g.inputs.push_back({"x", DType::kF32, {1, 6, 7, 40}});
    g.initializers.emplace("c", Tensor::scalar_f32(c.divisor));
    g.initializers.emplace("one", Tensor::scalar_f32(1.f));
    g.initializers.emplace("half", Tensor::scalar_f32(0.5f));
    auto pair = [&](const std::string& a, const std::string& b) {
      return c.swapped ? std::vector<std::string>{b, a} : std::vector<std::string>{a, b};
    };
    g.nodes = {{"div", "Div", {"x", "c"}, {"d"}, {}},
               {"erf", "Erf", {"d"}, {"e"}, {}},
               {"add", "Add", pair("e", "one"), {"a"}, {}},
               {"mul", "Mul", pair("x", "a"), {"m"}, {}},
               {"half", "Mul", pair("m", "half"), {"y"}, {}}};
    g.outputs = {"y"};
    if (c.intermediate_read_twice) {
      g.nodes.push_back({"relu", "Relu", {"e"}, {"r"}, {}});
      g.outputs.push_back("r");
    }
    g.infer();
    Graph opt = g;
    optimize_graph(opt, 3);
    int gelus = 0;
    for (const Node& n : opt.nodes) gelus += n.op == "Gelu";
    EXPECT_EQ(gelus, c.fuses ? 1 : 0) << what;
    EXPECT_EQ(opt.nodes.size(), c.fuses ? 1u : g.nodes.size()) << what;
    PlanOptions o;
    o.threads = 2;
    Plan fused(g, o);
    o.opt_level = 2;
    Plan unfused(g, o);
    const auto in = seeded_inputs(g);
    const std::vector<Tensor> y = fused.run(in), y2 = unfused.run(in);
    if (!c.fuses) {
      EXPECT_EQ(std::memcmp(y[0].raw(), y2[0].raw(), y[0].nbytes()), 0) << what;
    } else {
      // The fused GELU's erfc form against the decomposed graph's erf kernel: each within
      // 1.5e-7 of erf, so the two within 1.5e-7 |x| (plus an ulp of the product).
      int far = 0;
      for (int64_t i = 0; i < y[0].numel(); ++i) {
        const double xv = std::fabs(in[0].data<float>()[i]), a = y[0].data<float>()[i],
                     b = y2[0].data<float>()[i];
        far += std::fabs(a - b) > 1.5e-7 * xv + 2.4e-7 * std::fabs(b) + 1e-30;
      }
      EXPECT_EQ(far, 0) << what;
    }
    for (const StepInfo& st : fused.steps()) EXPECT_NE(st.kernel, "reference") << what;
    expect_elementwise_close(y, ReferenceExecutor(g).run(in), what);
  }
  Graph g;
  g.inputs.push_back({"x", DType::kF32, {3, 50}});
  g.nodes = {{"gelu", "Gelu", {"x"}, {"y"}, {}}};
  g.outputs = {"y"};
  g.infer();
  PlanOptions o;
  o.threads = 2;
  Plan plan(g, o);
  ASSERT_EQ(plan.steps().size(), 1u);
  EXPECT_EQ(plan.steps()[0].kernel, "fast");
  const auto in = seeded_inputs(g);
  expect_elementwise_close(plan.run(in), ReferenceExecutor(g).run(in), "onnx Gelu");
  g.nodes[0].attrs["approximate"] = std::string("tanh");
  try {
    g.infer();
    ADD_FAILURE() << "Gelu tanh accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kUnsupported);
    EXPECT_NE(std::string(e.what()).find("approximate"), std::string::npos) << e.what();
  }
}

TEST(MemoryPlan, LiveBuffersNeverOverlapAndReuseSavesMemory) {
  std::mt19937 rng(3);
  for (int trial = 0; trial < 50; ++trial) {
    std::vector<BufferLifetime> b;
    size_t total = 0;
    for (int i = 0; i < 40; ++i) {
      const int first = static_cast<int>(rng() % 30);
      b.push_back({1 + rng() % 5000, first, first + static_cast<int>(rng() % 6)});
      total += (b.back().bytes + 63) / 64 * 64;
    }
    const MemoryPlan p = plan_memory(b, true);
    for (size_t i = 0; i < b.size(); ++i) {
      EXPECT_EQ(p.offsets[i] % 64, 0u);
      EXPECT_LE(p.offsets[i] + b[i].bytes, p.arena_bytes);
      for (size_t j = i + 1; j < b.size(); ++j) {
        const bool live_together = !(b[i].last < b[j].first || b[j].last < b[i].first);
        const bool overlap =
            p.offsets[i] < p.offsets[j] + b[j].bytes && p.offsets[j] < p.offsets[i] + b[i].bytes;
        EXPECT_FALSE(live_together && overlap) << "buffers " << i << " and " << j;
      }
    }
    EXPECT_LT(p.arena_bytes, total);
    EXPECT_EQ(plan_memory(b, false).arena_bytes, total);
  }
}

TEST(PlanMemory, ArenaIsSmallerThanAllActivations) {
  Plan plan(build_zoo_model("resnet18-cifar"), {});
  const MemoryReport m = plan.memory();
  EXPECT_GT(m.arena_bytes, 0);
  EXPECT_LT(m.arena_bytes * 3, m.unplanned_bytes);
  EXPECT_GT(m.packed_weight_bytes, 0);
}

// View ops share their input's buffer: a channel shuffle's Reshapes, a Flatten, a view of
// a value read again after it and a view that is a graph output cost no activation memory
// and no copy, and the plan still matches the reference.
TEST(PlanMemory, ViewsShareTheirInputsBuffer) {
  Graph g;
  g.inputs.push_back({"x", DType::kF32, {1, 12, 5, 5}});
  g.initializers.emplace("s5", Tensor::from_vector<int64_t>({5}, {1, 2, 6, 5, 5}));
  g.initializers.emplace("s4", Tensor::from_vector<int64_t>({4}, {1, 12, 5, 5}));
  Node t{"t", "Transpose", {"r1"}, {"t1"}, {}};
  t.attrs["perm"] = std::vector<int64_t>{0, 2, 1, 3, 4};
  g.nodes = {{"a", "Relu", {"x"}, {"a1"}, {}},
             {"r", "Reshape", {"a1", "s5"}, {"r1"}, {}},
             t,
             {"r2", "Reshape", {"t1", "s4"}, {"r2o"}, {}},
             {"b", "Neg", {"r2o"}, {"b1"}, {}},
             {"late", "Add", {"b1", "a1"}, {"c1"}, {}},  // a1 read after its view
             {"f", "Flatten", {"c1"}, {"y"}, {}}};
  g.outputs = {"y", "r2o"};
  g.infer();
  PlanOptions o;
  o.threads = 2;
  o.layout = LayoutMode::kNchw;
  Plan plan(g, o);
  // Buffers: x, a1 (r1 shares it), t1 (r2o shares it), b1, c1 (y shares it).
  EXPECT_EQ(plan.memory().unplanned_bytes, 5 * 12 * 25 * 4);
  const auto in = seeded_inputs(g);
  const auto got = plan.run(in), want = ReferenceExecutor(g).run(in);
  ASSERT_EQ(got.size(), 2u);
  for (size_t i = 0; i < 2; ++i)
    EXPECT_EQ(std::memcmp(got[i].raw(), want[i].raw(), want[i].nbytes()), 0) << "output " << i;
}

TEST(PlanChoices, BadLayerChoicesAreClearErrors) {
  const Graph g = build_zoo_model("resnet18-cifar");
  auto expect_error = [&](const LayerChoices& layers, const std::string& fragment) {
    PlanOptions o;
    o.layers = layers;
    try {
      Plan p(g, o);
      ADD_FAILURE() << "expected an error containing " << fragment;
    } catch (const Error& e) {
      EXPECT_EQ(e.exit_code(), 2) << e.what();
      EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
    }
  };
  expect_error({{"no_such_node", {"gemm", {}}}}, "no_such_node");
  expect_error({{"linear", {"gemm", {}}}}, "not a convolution");
  expect_error({{"conv1", {"bogus", {}}}}, "unknown algorithm 'bogus'");
  expect_error({{"conv1", {"gemm", {{"no_such_knob", 1}}}}}, "no_such_knob");
}

TEST(PlanChoices, LayerFileParsesAndRejectsJunk) {
  const std::string path =
      testing::TempDir() + "/dlas_layers_" + std::to_string(::getpid()) + ".json";
  {
    std::ofstream f(path);
    f << R"({"conv1": {"algo": "gemm", "knobs": {}}, "layer1.0.conv1": {"algo": "direct"}})";
  }
  const LayerChoices c = read_layer_choices(path);
  EXPECT_EQ(c.size(), 2u);
  EXPECT_EQ(c.at("layer1.0.conv1").algo, "direct");
  EXPECT_EQ(c.at("layer1.0.conv1").layout, "");
  // The layout a choice was made on round-trips; an unknown one is rejected.
  write_layer_choices(path, {{"conv1", {"direct", {{"nv", 2}}, "nchw8c"}}, {"c2", {"gemm", {}}}});
  const LayerChoices back = read_layer_choices(path);
  EXPECT_EQ(back.at("conv1").layout, "nchw8c");
  EXPECT_EQ(back.at("conv1").knobs, (Knobs{{"nv", 2}}));
  EXPECT_EQ(back.at("c2").layout, "");
  {
    std::ofstream f(path);
    f << R"({"conv1": {"algo": "gemm", "layout": "nhwc"}})";
  }
  EXPECT_THROW(read_layer_choices(path), Error);
  {
    std::ofstream f(path);
    f << R"({"conv1": {"algo": "gemm", "bogus": 1}})";
  }
  EXPECT_THROW(read_layer_choices(path), Error);
  {
    std::ofstream f(path);
    f << "{not json";
  }
  EXPECT_THROW(read_layer_choices(path), Error);
  std::remove(path.c_str());
}

}  // namespace
}  // namespace dlas

// The oneDNN backend against the reference runtime: every zoo model, fusion visible in the
// lowered plan, small graphs for the ops the zoo does not use, errors that name the node.
#include <gtest/gtest.h>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <string>
#include <vector>

#include "dlas/model/zoo.h"
#include "dlas/system/executor.h"
#include "dlas/system/onednn_backend.h"

namespace dlas {
namespace {

uint32_t lcg(uint32_t& s) { return s = s * 1664525u + 1013904223u; }
float uniform(uint32_t& s, float lo, float hi) {
  return lo + (hi - lo) * static_cast<float>(lcg(s) >> 8) / 16777216.0f;
}

Tensor seeded_input(const Shape& shape, uint32_t seed = 12345) {
  Tensor t(DType::kF32, shape);
  float* p = t.data<float>();
  for (int64_t i = 0; i < t.numel(); ++i) p[i] = uniform(seed, -1.0f, 1.0f);
  return t;
}

// Zoo models start with PyTorch's BatchNorm defaults (scale 1, shift 0, mean 0, var 1),
// under which a wrong fold would go unnoticed: give every BatchNorm random statistics.
void randomize_batch_norms(Graph& g) {
  uint32_t seed = 777;
  const float lo[5] = {0, 0.5f, -0.2f, -0.2f, 0.5f}, hi[5] = {0, 1.5f, 0.2f, 0.2f, 1.5f};
  for (const Node& n : g.nodes) {
    if (n.op != "BatchNormalization") continue;
    for (size_t k = 1; k <= 4; ++k) {
      Tensor& t = g.initializers.at(n.inputs[k]);
      float* p = t.data<float>();
      for (int64_t i = 0; i < t.numel(); ++i) p[i] = uniform(seed, lo[k], hi[k]);
    }
  }
}

// The longest dot product any layer computes (Conv: C/group * KH * KW; Gemm/MatMul: K).
int64_t max_reduction_length(const Graph& g) {
  int64_t k = 1;
  for (const Node& n : g.nodes) {
    if (n.op == "Conv") {
      const Shape& w = g.value(n.inputs[1]).shape;
      k = std::max(k, shape_numel(w) / w[0]);
    } else if (n.op == "Gemm" || n.op == "MatMul") {
      const Shape& a = g.value(n.inputs[0]).shape;
      k = std::max(k, n.attr_int("transA", 0) ? a[a.size() - 2] : a.back());
    }
  }
  return k;
}

// Tolerance, relative to the largest reference output magnitude. Summed in another order
// (oneDNN's blocking, BatchNorm folded into the weights, Winograd where convolution_auto
// picks it on AVX-512), a length-K fp32 dot product moves by rounding errors that grow like
// a random walk, ~sqrt(K) * eps of its terms; the factor 16 covers the layers a difference
// passes through before the output. The longest reduction of the model sets K (resnet50:
// 4608 -> 1.3e-4; measured on AVX2: at most 1.1e-6, while a wrong BatchNorm fold or
// padding is off by 1e-2 or more).
double tolerance(const Graph& g) {
  return 16.0 * FLT_EPSILON * std::sqrt(static_cast<double>(max_reduction_length(g)));
}

double max_abs(const Tensor& t) {
  double m = 0;
  for (int64_t i = 0; i < t.numel(); ++i) m = std::max(m, std::fabs(t.get_as_double(i)));
  return m;
}

void expect_close(const Tensor& got, const Tensor& want, double rel_tol, const std::string& what) {
  ASSERT_EQ(got.shape(), want.shape()) << what;
  const double scale = std::max(max_abs(want), 1e-6);
  double worst = 0;
  int64_t at = 0;
  for (int64_t i = 0; i < want.numel(); ++i) {
    const double d = std::fabs(got.get_as_double(i) - want.get_as_double(i));
    if (!(d <= worst)) {
      worst = d;
      at = i;
    }
  }
  EXPECT_LE(worst / scale, rel_tol)
      << what << ": element " << at << " got " << got.get_as_double(at) << " want "
      << want.get_as_double(at) << " (output scale " << scale << ")";
}

std::vector<std::string> zoo_names() {
  std::vector<std::string> names;
  for (const ZooEntry& e : zoo_models()) names.push_back(e.name);
  return names;
}

class OnednnZoo : public ::testing::TestWithParam<std::string> {};

TEST_P(OnednnZoo, MatchesReference) {
  const std::string& name = GetParam();
  ZooOptions options;
  options.seed = 5;
  // ImageNet models at 64x64 (they pool globally) keep the reference runs short.
  if (find_zoo_model(name)->dataset != "cifar10") options.image_size = 64;
  Graph g = build_zoo_model(name, options);
  randomize_batch_norms(g);
  const Tensor x = seeded_input(g.inputs[0].shape);
  const Tensor want = ReferenceExecutor(g).run({x}).at(0);
  const double tol = tolerance(g);
  // Two threads for half the models: the OpenMP split must not change the result.
  const int threads = name.size() % 2 == 0 ? 2 : 1;
  OnednnExecutor exec(g, threads);
  std::vector<Tensor> got = exec.run({x});
  ASSERT_EQ(got.size(), 1u);
  expect_close(got[0], want, tol, name);
  // A second run reuses every buffer (in-place residual sums must not corrupt the input).
  expect_close(exec.run({x}).at(0), want, tol, name + " (second run)");
  // Every BatchNormalization that follows a Conv is folded: the zoo has no other kind
  // except DenseNet's pre-activation ones.
  std::vector<std::string> plan = exec.describe();
  const bool bn_step = std::any_of(
      plan.begin(), plan.end(), [](const std::string& s) { return s.rfind("batch_norm", 0) == 0; });
  EXPECT_EQ(bn_step, name == "densenet161") << name;
}

INSTANTIATE_TEST_SUITE_P(AllModels, OnednnZoo, ::testing::ValuesIn(zoo_names()),
                         [](const auto& info) {
                           std::string s = info.param;
                           for (char& c : s)
                             if (c == '-') c = '_';
                           return s;
                         });

TEST(OnednnBackend, FusesResidualAndActivations) {
  ZooOptions o;
  Graph g = build_zoo_model("resnet18-cifar", o);
  OnednnExecutor exec(g, 1);
  int convs = 0, sums = 0, standalone = 0;
  for (const std::string& s : exec.describe()) {
    if (s.rfind("conv ", 0) == 0) ++convs;
    if (s.find("+Add+Relu") != std::string::npos) ++sums;
    if (s.rfind("eltwise", 0) == 0 || s.rfind("binary", 0) == 0) ++standalone;
  }
  EXPECT_EQ(convs, 20);  // 17 3x3 convs (incl. conv1) + 3 shortcut 1x1 convs
  EXPECT_EQ(sums, 8);    // one residual Add + ReLU per BasicBlock, as post-ops
  EXPECT_EQ(standalone, 0);
}

// The ops the zoo does not use: MatMul (runtime operands), Softmax, Sigmoid, Clip, Sub.
TEST(OnednnBackend, SmallGraphMatchesReference) {
  Graph g;
  g.inputs = {{"a", DType::kF32, {3, 8}}, {"b", DType::kF32, {8, 5}}};
  g.initializers["lo"] = Tensor::scalar_f32(-0.5f);
  g.initializers["hi"] = Tensor::scalar_f32(0.75f);
  g.initializers["bias"] = Tensor::from_vector<float>({5}, {0.1f, -0.2f, 0.3f, 0.0f, 0.5f});
  g.nodes = {
      Node{"mm", "MatMul", {"a", "b"}, {"ab"}, {}},
      Node{"sub", "Sub", {"ab", "bias"}, {"abs"}, {}},
      Node{"clip", "Clip", {"abs", "lo", "hi"}, {"c"}, {}},
      Node{"sig", "Sigmoid", {"c"}, {"s"}, {}},
      Node{"soft", "Softmax", {"s"}, {"y"}, {{"axis", int64_t{1}}}},
  };
  g.outputs = {"y", "ab"};
  g.infer();
  const Tensor a = seeded_input({3, 8}, 1), b = seeded_input({8, 5}, 2);
  std::vector<Tensor> want = ReferenceExecutor(g).run({a, b});
  std::vector<Tensor> got = OnednnExecutor(g, 2).run({a, b});
  ASSERT_EQ(got.size(), 2u);
  expect_close(got[0], want[0], 16 * FLT_EPSILON * 8, "softmax output");
  expect_close(got[1], want[1], 16 * FLT_EPSILON * 8, "matmul output");
}

Tensor int64s(std::vector<int64_t> v) {
  const int64_t n = static_cast<int64_t>(v.size());
  return Tensor::from_vector<int64_t>({n}, std::move(v));
}

// The ops torchvision's exports add to the zoo's: constant Pad (DenseNet's transitions,
// here with a non-zero value and a conv reading it), ReduceMean with and without kept dims
// (MNASNet's pooling), Transpose and Slice (ShuffleNet's channel shuffle and split) and
// HardSigmoid
// (MobileNetV3's squeeze-and-excitation gates); two runs, so the pad border survives.
TEST(OnednnBackend, TorchvisionOpsMatchReference) {
  Graph g;
  g.inputs = {{"x", DType::kF32, {1, 6, 5, 4}}};
  g.initializers["pads"] = int64s({0, 0, 1, 2, 0, 0, 2, 1});
  g.initializers["pv"] = Tensor::scalar_f32(0.25f);
  g.initializers["w"] = seeded_input({8, 6, 3, 3}, 7);
  g.initializers["axes"] = int64s({2, 3});
  g.initializers["shape"] = int64s({1, 2, 4, 6, 5});
  g.initializers["starts"] = int64s({2, -4});
  g.initializers["ends"] = int64s({6, 100});
  g.initializers["sl_axes"] = int64s({1, -1});
  g.nodes = {
      Node{"pad", "Pad", {"x", "pads", "pv"}, {"xp"}, {}},
      Node{"conv", "Conv", {"xp", "w"}, {"c"}, {}},
      Node{"mean", "ReduceMean", {"c", "axes"}, {"m"}, {{"keepdims", int64_t{0}}}},
      Node{"hsig", "HardSigmoid", {"m"}, {"h"}, {{"alpha", 0.3f}, {"beta", 0.4f}}},
      Node{"mean_k", "ReduceMean", {"c"}, {"mk"}, {{"axes", std::vector<int64_t>{1}}}},
      Node{"to5d", "Reshape", {"c", "shape"}, {"c5"}, {}},
      Node{"shuffle", "Transpose", {"c5"}, {"t"}, {{"perm", std::vector<int64_t>{0, 3, 1, 2, 4}}}},
      Node{"split", "Slice", {"c", "starts", "ends", "sl_axes"}, {"sl"}, {}},
  };
  g.outputs = {"h", "mk", "t", "xp", "sl"};
  g.infer();
  ASSERT_EQ(g.value("c").shape, (Shape{1, 8, 6, 5}));
  const Tensor x = seeded_input({1, 6, 5, 4}, 8);
  const std::vector<Tensor> want = ReferenceExecutor(g).run({x});
  OnednnExecutor exec(g, 2);
  for (int run = 0; run < 2; ++run) {
    const std::vector<Tensor> got = exec.run({x});
    ASSERT_EQ(got.size(), 5u);
    const double tol = 16 * FLT_EPSILON * std::sqrt(54.0);
    expect_close(got[0], want[0], tol, "HardSigmoid(ReduceMean)");
    expect_close(got[1], want[1], tol, "ReduceMean, kept dims");
    expect_close(got[2], want[2], tol, "Transpose");
    expect_close(got[3], want[3], 0, "Pad");
    expect_close(got[4], want[4], tol, "Slice");
  }
  // Edge padding is refused with one line naming the node.
  g.nodes[0].attrs["mode"] = std::string("edge");
  try {
    OnednnExecutor bad(g, 1);
    FAIL() << "edge padding was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kUnsupported);
    EXPECT_NE(std::string(e.what()).find("pad"), std::string::npos) << e.what();
  }
}

// y = relu(conv(x) + x): the residual is the convolution's own input, so the sum post-op
// must not write into x's buffer in place while the convolution still reads it.
TEST(OnednnBackend, ResidualOfTheConvInput) {
  Graph g;
  g.inputs = {{"x", DType::kF32, {1, 8, 5, 5}}};
  g.initializers["w0"] = seeded_input({8, 8, 1, 1}, 2);
  g.initializers["w"] = seeded_input({8, 8, 3, 3}, 3);
  g.initializers["b"] = seeded_input({8}, 4);
  g.nodes = {
      // A convolution produces xr, so it is in the blocked layout the sum writes.
      Node{"pre", "Conv", {"x", "w0"}, {"xr"}, {}},
      Node{"conv", "Conv", {"xr", "w", "b"}, {"c"}, {{"pads", std::vector<int64_t>{1, 1, 1, 1}}}},
      Node{"add", "Add", {"c", "xr"}, {"s"}, {}},
      Node{"relu", "Relu", {"s"}, {"y"}, {}},
  };
  g.outputs = {"y"};
  g.infer();
  const Tensor x = seeded_input({1, 8, 5, 5}, 5);
  const Tensor want = ReferenceExecutor(g).run({x}).at(0);
  OnednnExecutor exec(g, 1);
  const std::vector<std::string> plan = exec.describe();
  EXPECT_TRUE(std::any_of(plan.begin(), plan.end(), [](const std::string& s) {
    return s.find("conv conv+Add+Relu") == 0;
  })) << "the Add and Relu were not fused";
  for (int run = 0; run < 2; ++run)
    expect_close(exec.run({x}).at(0), want, 16 * FLT_EPSILON * std::sqrt(72.0), "conv + x");
}

TEST(OnednnBackend, UnsupportedOpNamesTheNode) {
  Graph g;
  g.inputs = {{"x", DType::kF32, {1, 4}}};
  g.nodes = {Node{"odd_one", "Sinh", {"x"}, {"y"}, {}}};
  g.outputs = {"y"};
  g.infer();
  try {
    OnednnExecutor exec(g, 1);
    FAIL() << "Sinh was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kUnsupported);
    EXPECT_NE(std::string(e.what()).find("odd_one"), std::string::npos) << e.what();
  }
}

TEST(OnednnBackend, RejectsWrongInputs) {
  Graph g = build_zoo_model("mobilenetv1-cifar", {});
  OnednnExecutor exec(g, 1);
  try {
    exec.run({seeded_input({1, 3, 16, 16})});
    FAIL() << "a wrong shape was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kInvalidInput);
    EXPECT_NE(std::string(e.what()).find("input"), std::string::npos) << e.what();
  }
  EXPECT_THROW(exec.run({}), Error);
}

}  // namespace
}  // namespace dlas

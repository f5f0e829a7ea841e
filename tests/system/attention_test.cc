// A vision transformer's pieces as the exporters write them: the class token expanded through
// the Equal / Where shape pattern (constant-folded), concatenated before the tokens, an
// attention head (Q·Kᵀ, a window mask broadcast over the heads, softmax, ·V) and the class
// token picked by a Gather. Every step of the f32 and bf16 plans runs on a fast kernel
// (the batched MatMul for the two products of activations) and the plan matches the
// reference runtime on the unoptimized graph.
//   build/dlas_tests --gtest_filter='Attention*'
#include <gtest/gtest.h>

#include <random>

#include "dlas/optimize/compress_spec.h"
#include "dlas/system/compress.h"
#include "dlas/system/executor.h"
#include "dlas/system/passes.h"
#include "dlas/system/plan.h"
#include "system/plan_test_util.h"

namespace dlas {
namespace {

Tensor random_f32(const Shape& s, std::mt19937& rng, float scale) {
  std::normal_distribution<float> d(0.f, scale);
  std::vector<float> v(static_cast<size_t>(shape_numel(s)));
  for (float& f : v) f = d(rng);
  return Tensor::from_vector<float>(s, v);
}

// x [1, 8, 32] -> [class token; x] [1, 9, 32] -> 4 heads of 8 -> y [1, 9, 32] and its class
// token cls [1, 32]. fold: constant-fold it, as the ONNX import does (Expand's shape is known
// once its constant inputs fold).
Graph attention_graph(bool fold = true) {
  std::mt19937 rng(11);
  Graph g;
  g.inputs.push_back({"x", DType::kF32, {1, 8, 32}});
  auto& init = g.initializers;
  init.emplace("cls_token", random_f32({1, 1, 32}, rng, 1.f));
  init.emplace("cls_shape", Tensor::from_vector<int64_t>({3}, {1, -1, -1}));
  init.emplace("three", Tensor::from_vector<int64_t>({1}, {3}));
  init.emplace("minus_one", Tensor::from_vector<int64_t>({}, {-1}));
  for (const char* w : {"wq", "wk", "wv"}) init.emplace(w, random_f32({32, 32}, rng, 0.3f));
  init.emplace("heads", Tensor::from_vector<int64_t>({4}, {1, 9, 4, 8}));
  init.emplace("scale", Tensor::scalar_f32(2.828427f));
  init.emplace("split", Tensor::from_vector<int64_t>({4}, {2, 2, 9, 9}));
  init.emplace("mask", random_f32({2, 1, 9, 9}, rng, 2.f));  // per window pair, all heads
  init.emplace("joined", Tensor::from_vector<int64_t>({4}, {1, 4, 9, 9}));
  init.emplace("tokens", Tensor::from_vector<int64_t>({3}, {1, 9, 32}));
  init.emplace("zero", Tensor::from_vector<int64_t>({}, {0}));
  Node ones{"ones", "ConstantOfShape", {"three"}, {"ones"}, {}};
  ones.attrs["value"] = Tensor::from_vector<int64_t>({1}, {1});
  Node cat{"cat", "Concat", {"cls", "x"}, {"h"}, {}};
  cat.attrs["axis"] = int64_t{1};
  auto transpose = [](const char* name, const char* in, const char* out,
                      std::vector<int64_t> perm) {
    Node t{name, "Transpose", {in}, {out}, {}};
    t.attrs["perm"] = std::move(perm);
    return t;
  };
  Node sm{"softmax", "Softmax", {"s2"}, {"p"}, {}};
  sm.attrs["axis"] = int64_t{-1};
  Node pick{"pick", "Gather", {"y", "zero"}, {"cls_out"}, {}};
  pick.attrs["axis"] = int64_t{1};
  g.nodes = {ones,
             {"neg", "Mul", {"ones", "minus_one"}, {"neg"}, {}},
             {"eq", "Equal", {"cls_shape", "neg"}, {"eq"}, {}},
             {"where", "Where", {"eq", "ones", "cls_shape"}, {"expand_shape"}, {}},
             {"expand", "Expand", {"cls_token", "expand_shape"}, {"cls"}, {}},
             cat,
             {"q", "MatMul", {"h", "wq"}, {"q0"}, {}},
             {"k", "MatMul", {"h", "wk"}, {"k0"}, {}},
             {"v", "MatMul", {"h", "wv"}, {"v0"}, {}},
             {"q_heads", "Reshape", {"q0", "heads"}, {"q1"}, {}},
             {"k_heads", "Reshape", {"k0", "heads"}, {"k1"}, {}},
             {"v_heads", "Reshape", {"v0", "heads"}, {"v1"}, {}},
             transpose("q_t", "q1", "q2", {0, 2, 1, 3}),
             transpose("k_t", "k1", "k2", {0, 2, 3, 1}),
             transpose("v_t", "v1", "v2", {0, 2, 1, 3}),
             {"q_scale", "Div", {"q2", "scale"}, {"q3"}, {}},
             {"scores", "MatMul", {"q3", "k2"}, {"s0"}, {}},
             {"split_heads", "Reshape", {"s0", "split"}, {"s1"}, {}},
             {"mask_add", "Add", {"s1", "mask"}, {"s1m"}, {}},
             {"join_heads", "Reshape", {"s1m", "joined"}, {"s2"}, {}},
             sm,
             {"context", "MatMul", {"p", "v2"}, {"c0"}, {}},
             transpose("c_t", "c0", "c1", {0, 2, 1, 3}),
             {"merge", "Reshape", {"c1", "tokens"}, {"y"}, {}},
             pick};
  g.outputs = {"y", "cls_out"};
  if (fold) fold_constants(g);
  return g;
}

TEST(Attention, ClassTokenShapePatternFolds) {
  Graph g = attention_graph(false);
  const Tensor token = g.initializers.at("cls_token");
  fold_constants(g);
  for (const Node& n : g.nodes)
    for (const char* gone : {"ConstantOfShape", "Mul", "Equal", "Where", "Expand"})
      EXPECT_NE(n.op, gone) << n.name;
  const Tensor* cls = g.constant("cls");
  ASSERT_NE(cls, nullptr);
  EXPECT_EQ(cls->shape(), (Shape{1, 1, 32}));
  EXPECT_EQ(cls->to_float_vector(), token.to_float_vector());
}

TEST(Attention, EveryStepRunsFastAndMatchesTheReference) {
  for (const char* compress : {"dense", "bf16"}) {
    Graph g = attention_graph();
    const auto in = seeded_inputs(g);
    const auto want = ReferenceExecutor(g).run(in);
    if (std::string(compress) == "bf16") quantize(g, parse_quant_spec("bf16"));
    PlanOptions o;
    o.threads = 2;
    Plan plan(g, o);
    int products = 0;
    for (const StepInfo& st : plan.steps()) {
      EXPECT_NE(st.kernel, "reference") << compress << ": " << st.node << " (" << st.op << ")";
      if (st.node == "scores" || st.node == "context") {
        ++products;
        EXPECT_NE(st.kernel.find("matmul"), std::string::npos) << compress << ": " << st.kernel;
      }
    }
    EXPECT_EQ(products, 2) << compress;
    const auto got = plan.run(in);
    ASSERT_EQ(got.size(), want.size());
    const bool bf16 = std::string(compress) == "bf16";
    for (size_t o = 0; o < want.size(); ++o) {
      const Tensor g32 = got[o].cast(DType::kF32);
      // f32: a few roundings of 32-long dot products; bf16: a few of its roundings.
      EXPECT_EQ(count_far(want[o], g32, bf16 ? 4.0 / 128 : 0, bf16 ? 0.03 : 1e-5), 0)
          << compress << " output " << o;
    }
  }
}

// MaxViT's two Einsums become Transposes and MatMuls on the batched GEMM; a form that is no
// matrix product stays an Einsum (on the reference kernel).
TEST(Attention, EinsumBecomesABatchedMatMul) {
  std::mt19937 rng(5);
  Graph g;
  g.inputs.push_back({"q", DType::kF32, {1, 2, 3, 7, 8}});
  g.inputs.push_back({"k", DType::kF32, {1, 2, 3, 7, 8}});
  g.inputs.push_back({"v", DType::kF32, {1, 2, 3, 7, 8}});
  Node qk{"qk", "Einsum", {"q", "k"}, {"s"}, {}};
  qk.attrs["equation"] = std::string("B G H I D, B G H J D -> B G H I J");
  Node sm{"softmax", "Softmax", {"s"}, {"p"}, {}};
  sm.attrs["axis"] = int64_t{-1};
  Node pv{"pv", "Einsum", {"p", "v"}, {"o"}, {}};
  pv.attrs["equation"] = std::string("B G H I J, B G H J D -> B G H I D");
  Node dot{"dot", "Einsum", {"q", "k"}, {"d"}, {}};  // a per-row dot product: no MatMul
  dot.attrs["equation"] = std::string("bghid,bghid->bghi");
  g.nodes = {qk, sm, pv, dot};
  g.outputs = {"o", "d"};
  g.infer();
  const Graph before = g;
  EXPECT_EQ(einsum_to_matmul(g), 2);
  int matmuls = 0, einsums = 0;
  for (const Node& n : g.nodes) {
    matmuls += n.op == "MatMul";
    einsums += n.op == "Einsum";
  }
  EXPECT_EQ(matmuls, 2);
  EXPECT_EQ(einsums, 1);
  std::vector<Tensor> in;
  for (const ValueInfo& v : before.inputs) in.push_back(random_f32(v.shape, rng, 1.f));
  const auto want = ReferenceExecutor(before).run(in);
  PlanOptions o;
  o.threads = 2;
  Plan plan(before, o);
  int fast_products = 0;
  for (const StepInfo& st : plan.steps()) fast_products += st.kernel == "matmul";
  EXPECT_EQ(fast_products, 2);
  const auto got = plan.run(in);
  for (size_t i = 0; i < want.size(); ++i) EXPECT_EQ(count_far(want[i], got[i], 0, 1e-5), 0) << i;
}

}  // namespace
}  // namespace dlas

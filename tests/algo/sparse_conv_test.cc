// The sparse conv algorithms (sparse-1x1, sparse-gemm, sparse-direct) against the reference Conv
// (ConvTester) with weights masked to 0%, 50%, 90% and 100% sparsity: every ISA x
// generated problem at the default knobs, sampled knob points, every weight format,
// fused epilogues, two threads on every parallel axis, and knob validation.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "algo/conv_tester.h"
#include "dlas/core/error.h"

namespace dlas::test {
namespace {

const double kSparsities[] = {0.0, 0.5, 0.9, 1.0};

class SparseConvTest : public ::testing::TestWithParam<std::string> {
 protected:
  const ConvAlgorithm& algo() const {
    const ConvAlgorithm* a = find_conv_algorithm(GetParam());
    EXPECT_NE(a, nullptr);
    return *a;
  }
};

TEST(SparseConvListTest, SparseAlgorithmsAreListedApart) {
  ASSERT_EQ(sparse_conv_algorithms().size(), 3u);
  for (const ConvAlgorithm* a : sparse_conv_algorithms()) {
    EXPECT_EQ(find_conv_algorithm(a->name()), a);
    EXPECT_EQ(std::count(conv_algorithms().begin(), conv_algorithms().end(), a), 0);
  }
}

TEST_P(SparseConvTest, GeneratedProblemsEverySparsity) {
  int tested = 0;
  for (Isa isa : supported_isas())
    for (const ConvProblem& p : generated_conv_problems()) {
      if (!algo().supports(p)) continue;
      for (double s : kSparsities) {
        ConvTester()
            .problem(p)
            .weight_sparsity(s)
            .seed(static_cast<uint32_t>(s * 100) + 3)
            .test(algo(), isa);
        ++tested;
      }
    }
  EXPECT_GT(tested, 0);
}

TEST_P(SparseConvTest, SampledKnobPoints) {
  for (Isa isa : supported_isas())
    for (const ConvProblem& p : generated_conv_problems()) {
      if (!algo().supports(p)) continue;
      const KnobSpace space = algo().knob_space(p, isa);
      const int64_t n = space.size(), samples = 6;
      for (int64_t s = 0; s < samples; ++s)
        ConvTester()
            .problem(p)
            .weight_sparsity(s % 2 ? 0.9 : 0.5)
            .threads(s % 3 == 0 ? 2 : 1)
            .test(algo(), isa, space.point((n / samples) * s + s % n));
    }
}

// Every format (auto, csr, bsr4x1, bsr8x1, bsr1x4) x vecs on shapes with channel tails;
// auto is also driven into its BSR choices by block-structured weights (sparsity 0).
TEST_P(SparseConvTest, EveryFormatAndTile) {
  ConvProblem p3, p1;
  p3.c = 19, p3.k = 21, p3.h = 9, p3.w = 11, p3.kh = p3.kw = 3;
  p3.pad_t = p3.pad_l = p3.pad_b = p3.pad_r = 1, p3.has_bias = true;
  p1.c = 37, p1.k = 29, p1.h = 7, p1.w = 13, p1.has_bias = true;
  for (Isa isa : supported_isas())
    for (const ConvProblem& p : {p3, p1}) {
      if (!algo().supports(p)) continue;
      const KnobSpace space = algo().knob_space(p, isa);
      for (int64_t f : space.find("format")->values)
        for (int64_t v : space.find("vecs")->values)
          for (double s : {0.0, 0.9}) {
            Knobs k = algo().default_knobs(p, isa);
            k["format"] = f, k["vecs"] = v;
            ConvTester().problem(p).weight_sparsity(s).test(algo(), isa, k);
          }
    }
}

TEST_P(SparseConvTest, FusedEpilogues) {
  struct Act {
    Activation a;
    float p0, p1;
  };
  const Act acts[] = {{Activation::kRelu, 0, 0},    {Activation::kClip, 0, 6},
                      {Activation::kSilu, 0, 0},    {Activation::kHardSwish, 0, 0},
                      {Activation::kSigmoid, 0, 0}, {Activation::kHardSigmoid, 0.2f, 0.5f},
                      {Activation::kNone, 0, 0}};
  for (Isa isa : supported_isas())
    for (const Act& act : acts)
      for (bool res : {false, true}) {
        ConvTester t;
        t.channels(17, 23).input(9, 11).kernel(3, 3).pad(1).bias(true);
        t.activation(act.a, act.p0, act.p1).residual(res).weight_sparsity(0.9);
        if (algo().supports(t.problem())) t.test(algo(), isa);
        ConvTester()
            .channels(24, 20)
            .input(7, 9)
            .kernel(1, 1)
            .bias(false)
            .activation(act.a, act.p0, act.p1)
            .residual(res)
            .weight_sparsity(0.5)
            .test(algo(), isa);
      }
}

TEST_P(SparseConvTest, TwoThreadsEveryParallelAxis) {
  for (Isa isa : supported_isas())
    for (const ConvProblem& p : generated_conv_problems()) {
      if (!algo().supports(p)) continue;
      const KnobSpace space = algo().knob_space(p, isa);
      const KnobSpec* axis = space.find("parallel");
      ASSERT_NE(axis, nullptr);
      for (int64_t v : axis->values) {
        Knobs k = algo().default_knobs(p, isa);
        k["parallel"] = v;
        if (k.count("nc")) k["nc"] = 64;  // several blocks, a ragged last one
        ConvProblem q = p;
        q.epilogue.act = Activation::kRelu;
        q.epilogue.residual = true;
        ConvTester().problem(q).threads(2).weight_sparsity(0.9).test(algo(), isa, k);
      }
    }
}

TEST_P(SparseConvTest, DefaultIsInTheSpaceAndBadKnobsAreRejected) {
  ConvProblem p = generated_conv_problems()[5];  // 1x1: both algorithms support it
  ASSERT_TRUE(algo().supports(p));
  const Isa isa = supported_isas().back();
  Knobs k = algo().default_knobs(p, isa);
  algo().knob_space(p, isa).validate(k, "test");
  std::vector<float> w(static_cast<size_t>(p.weight_count()), 0.f);
  for (const char* bad : {"format", "vecs", "parallel"}) {
    Knobs kb = k;
    kb[bad] = 999;
    try {
      algo().prepare(p, w.data(), nullptr, kb, isa);
      ADD_FAILURE() << "bad knob " << bad << " accepted";
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::kInvalidInput);
    }
  }
}

TEST(Sparse1x1ConvTest, OnlyOneByOne) {
  const ConvAlgorithm* a = find_conv_algorithm("sparse-1x1");
  ASSERT_NE(a, nullptr);
  ConvProblem p = generated_conv_problems()[1];  // 3x3
  EXPECT_FALSE(a->supports(p));
  std::vector<float> w(static_cast<size_t>(p.weight_count()), 1.f);
  try {
    a->prepare(p, w.data(), nullptr, a->default_knobs(p, Isa::kScalar), Isa::kScalar);
    ADD_FAILURE() << "3x3 accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kUnsupported);
  }
}

INSTANTIATE_TEST_SUITE_P(Algos, SparseConvTest,
                         ::testing::Values("sparse-1x1", "sparse-gemm", "sparse-direct"),
                         [](const auto& info) {
                           std::string n = info.param;
                           std::replace(n.begin(), n.end(), '-', '_');
                           return n;
                         });

}  // namespace
}  // namespace dlas::test

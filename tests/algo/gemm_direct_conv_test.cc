// The `gemm` and `direct` conv algorithms against the reference Conv (ConvTester):
// every ISA x generated problem at the default knobs, a sampled set of knob points,
// every fused epilogue, two threads on both parallel axes, and knob validation.
#include <gtest/gtest.h>

#include <string>

#include "algo/conv_tester.h"
#include "dlas/core/error.h"

namespace dlas::test {
namespace {

class GemmDirectConvTest : public ::testing::TestWithParam<std::string> {
 protected:
  const ConvAlgorithm& algo() const {
    const ConvAlgorithm* a = find_conv_algorithm(GetParam());
    EXPECT_NE(a, nullptr);
    return *a;
  }
};

TEST_P(GemmDirectConvTest, GeneratedProblemsDefaultKnobs) {
  int tested = 0;
  for (Isa isa : supported_isas())
    for (const ConvProblem& p : generated_conv_problems()) {
      if (!algo().supports(p)) continue;
      ConvTester().problem(p).test(algo(), isa);
      ++tested;
    }
  EXPECT_GT(tested, 0);
}

TEST_P(GemmDirectConvTest, SampledKnobPoints) {
  for (Isa isa : supported_isas())
    for (const ConvProblem& p : generated_conv_problems()) {
      if (!algo().supports(p)) continue;
      const KnobSpace space = algo().knob_space(p, isa);
      const int64_t n = space.size(), samples = 5;
      for (int64_t s = 0; s < samples; ++s)
        ConvTester().problem(p).test(algo(), isa, space.point((n / samples) * s + s % n));
    }
}

TEST_P(GemmDirectConvTest, FusedEpilogues) {
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
        t.channels(17, 23).input(9, 11).kernel(3, 3).pad(1).bias(true).activation(act.a, act.p0,
                                                                                  act.p1);
        t.residual(res).test(algo(), isa);
        ConvTester()
            .channels(24, 20)
            .input(7, 9)
            .kernel(1, 1)
            .bias(false)
            .activation(act.a, act.p0, act.p1)
            .residual(res)
            .test(algo(), isa);
      }
}

TEST_P(GemmDirectConvTest, TwoThreadsBothParallelAxes) {
  for (Isa isa : supported_isas())
    for (const ConvProblem& p : generated_conv_problems()) {
      if (!algo().supports(p)) continue;
      const KnobSpace space = algo().knob_space(p, isa);
      const KnobSpec* axis = space.find("parallel");
      ASSERT_NE(axis, nullptr);
      for (int64_t v : axis->values) {
        Knobs k = algo().default_knobs(p, isa);
        k["parallel"] = v;
        ConvProblem q = p;
        q.epilogue.act = Activation::kRelu;
        q.epilogue.residual = true;
        ConvTester().problem(q).threads(2).test(algo(), isa, k);
      }
    }
}

// gemm's two orientations on both parallel axes (with cache blocks small enough to
// split R and the pixels on one of them), a clamp + residual epilogue and 2 threads:
// the orientations share nothing past the microkernel.
TEST(GemmConvTest, BothOrientationsBothAxes) {
  const ConvAlgorithm* gemm = find_conv_algorithm("gemm");
  ASSERT_NE(gemm, nullptr);
  for (Isa isa : supported_isas())
    for (const ConvProblem& p : generated_conv_problems()) {
      const KnobSpace space = gemm->knob_space(p, isa);
      const KnobSpec* orient = space.find("orient");
      ASSERT_NE(orient, nullptr);
      for (int64_t o : orient->values)
        for (int64_t par : {0, 1}) {
          Knobs k = gemm->default_knobs(p, isa);
          k["orient"] = o;
          k["parallel"] = par;
          if (par == 1) k["kc"] = 64, k["nc"] = 64, k["mc"] = 16, k["loop_order"] = 1;
          ConvProblem q = p;
          q.epilogue.act = Activation::kClip;
          q.epilogue.p0 = -0.5f, q.epilogue.p1 = 0.75f;
          q.epilogue.residual = par == 1;
          ConvTester().problem(q).threads(2).test(*gemm, isa, k);
        }
    }
}

TEST_P(GemmDirectConvTest, DefaultIsInTheSpaceAndBadKnobsAreRejected) {
  ConvProblem p = generated_conv_problems()[1];
  const Isa isa = supported_isas().back();
  Knobs k = algo().default_knobs(p, isa);
  algo().knob_space(p, isa).validate(k, "test");
  k["ukernel"] = 999;
  std::vector<float> w(static_cast<size_t>(p.weight_count()), 0.f);
  try {
    algo().prepare(p, ConvWeights::f32(w.data(), nullptr), k, isa);
    ADD_FAILURE() << "bad knob accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kInvalidInput);
  }
}

INSTANTIATE_TEST_SUITE_P(Algos, GemmDirectConvTest, ::testing::Values("gemm", "direct"),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace dlas::test

// Every f32 per-channel affine kernel against the scalar kernel for every activation, on
// NCHW planes (lanes 1), whole vector blocks (8, 16) and a narrower block (4), with pixel
// counts around the vector widths (tails), and nothing written past the run. Tolerance: the
// epilogue test's (vector exp, FMA contraction), on the affine's result.
//   build/dlas_tests --gtest_filter='F32VAffine*'
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "algo/microkernels/f32-vaffine/f32_vaffine.h"

namespace dlas::test {
namespace {

struct AffineCase {
  ukernel::F32VAffineFn fn;
  Isa needs;
  std::string label;
};

class F32VAffineTest : public ::testing::TestWithParam<AffineCase> {
 protected:
  void SetUp() override {
    if (!isa_supported(GetParam().needs))
      GTEST_SKIP() << "CPU lacks " << isa_name(GetParam().needs);
  }
};

TEST_P(F32VAffineTest, EveryActivationLaneCountAndTail) {
  const Activation acts[] = {Activation::kNone,      Activation::kRelu, Activation::kClip,
                             Activation::kSigmoid,   Activation::kSilu, Activation::kHardSigmoid,
                             Activation::kHardSwish, Activation::kErf,  Activation::kGelu};
  const double eps = std::numeric_limits<float>::epsilon();
  for (Activation act : acts)
    for (size_t lanes : {1, 4, 8, 16})
      for (size_t pixels : {0, 1, 3, 7, 16, 17, 49}) {
        const size_t n = pixels * lanes;
        std::mt19937 rng(static_cast<uint32_t>(n * 7 + lanes));
        std::uniform_real_distribution<float> d(-3.f, 3.f);
        std::vector<float> x(n + 1), s(lanes), t(lanes);
        for (float& v : x) v = d(rng);
        for (float& v : s) v = d(rng);
        for (float& v : t) v = d(rng);
        const float p0 = act == Activation::kHardSigmoid ? 0.2f
                         : act == Activation::kGelu      ? static_cast<float>(std::sqrt(2.0))
                                                         : -1.f;
        const float p1 = act == Activation::kHardSigmoid ? 0.5f : 1.5f;
        std::vector<float> want(n + 1, 7.f), got(n + 1, 7.f);
        ukernel::f32_vaffine__scalar(pixels, lanes, x.data(), s.data(), t.data(), want.data(), act,
                                     p0, p1);
        GetParam().fn(pixels, lanes, x.data(), s.data(), t.data(), got.data(), act, p0, p1);
        int bad = 0;
        for (size_t i = 0; i <= n; ++i) {
          const double pre = std::fabs(x[i] * s[i % lanes]) + std::fabs(t[i % lanes]);
          const double tol = 8 * eps * std::fabs(want[i]) + 8 * eps * pre +
                             (act == Activation::kErf ? 1.5e-7 : 0.0) +
                             (act == Activation::kGelu ? 1.5e-7 * pre : 0.0) + 1e-37;
          const bool ok = i == n ? got[i] == 7.f : std::fabs(double(got[i]) - want[i]) <= tol;
          if (!ok && bad++ < 3)
            ADD_FAILURE() << GetParam().label << " " << activation_name(act) << " lanes=" << lanes
                          << " pixels=" << pixels << ": y[" << i << "] = " << got[i] << ", want "
                          << want[i];
        }
      }
}

// In place (y == x), as the plan may bind it.
TEST_P(F32VAffineTest, InPlace) {
  std::vector<float> x(16 * 5), s(16, 2.f), t(16, -1.f);
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i % 7) - 3.f;
  std::vector<float> want(x.size());
  ukernel::f32_vaffine__scalar(5, 16, x.data(), s.data(), t.data(), want.data(), Activation::kRelu,
                               0, 0);
  GetParam().fn(5, 16, x.data(), s.data(), t.data(), x.data(), Activation::kRelu, 0, 0);
  EXPECT_EQ(x, want);
}

INSTANTIATE_TEST_SUITE_P(
    All, F32VAffineTest,
    ::testing::Values(AffineCase{&ukernel::f32_vaffine__avx2, Isa::kAvx2, "avx2"},
                      AffineCase{&ukernel::f32_vaffine__avx512, Isa::kAvx512, "avx512"}),
    [](const auto& info) { return info.param.label; });

}  // namespace
}  // namespace dlas::test

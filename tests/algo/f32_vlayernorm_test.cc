// Every f32 layer-normalization kernel against a double-precision evaluation of the row
// formula, on row lengths around the vector widths (tails, ConvNeXt's 96 and 768), rows of
// large offset (the variance of values far from zero) and constant rows (zero variance,
// where eps alone divides), and nothing written past the rows; in place too.
//   build/dlas_tests --gtest_filter='*F32VLayerNorm*'
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "algo/microkernels/f32-vlayernorm/f32_vlayernorm.h"

namespace dlas::test {
namespace {

struct LayerNormCase {
  ukernel::F32VLayerNormFn fn;
  Isa needs;
  std::string label;
};

class F32VLayerNormTest : public ::testing::TestWithParam<LayerNormCase> {
 protected:
  void SetUp() override {
    if (!isa_supported(GetParam().needs))
      GTEST_SKIP() << "CPU lacks " << isa_name(GetParam().needs);
  }
};

TEST_P(F32VLayerNormTest, RowLengthsOffsetsAndTails) {
  const float eps = 1e-6f;
  for (size_t c : {1, 3, 7, 8, 15, 16, 17, 33, 96, 100, 768})
    for (float offset : {0.f, 50.f}) {
      const size_t rows = 5, n = rows * c;
      std::mt19937 rng(static_cast<uint32_t>(c * 13 + static_cast<size_t>(offset)));
      std::uniform_real_distribution<float> d(-2.f, 2.f);
      std::vector<float> x(n + 1), gamma(c), beta(c);
      for (float& v : x) v = d(rng) + offset;
      for (size_t i = 0; i < c; ++i) x[3 * c + i] = offset + 0.5f;  // a constant row
      for (float& v : gamma) v = d(rng);
      for (float& v : beta) v = d(rng);
      std::vector<float> got(n + 1, 7.f);
      GetParam().fn(rows, c, x.data(), gamma.data(), beta.data(), eps, got.data());
      EXPECT_EQ(got[n], 7.f) << "wrote past the rows";
      int bad = 0;
      for (size_t r = 0; r < rows; ++r) {
        double mean = 0, var = 0;
        for (size_t i = 0; i < c; ++i) mean += x[r * c + i];
        mean /= static_cast<double>(c);
        for (size_t i = 0; i < c; ++i) var += (x[r * c + i] - mean) * (x[r * c + i] - mean);
        var /= static_cast<double>(c);
        const double inv = 1.0 / std::sqrt(var + eps);
        for (size_t i = 0; i < c; ++i) {
          const double z = (x[r * c + i] - mean) * inv;
          const double want = z * gamma[i] + beta[i];
          // f32 sums of c values around `offset`: the mean's rounding, scaled by 1/sigma.
          const double tol = 1e-5 * (std::fabs(z * gamma[i]) + std::fabs(beta[i])) +
                             4e-7 * std::sqrt(static_cast<double>(c)) * (offset + 2.0) * inv *
                                 std::fabs(gamma[i]) +
                             1e-6;
          if (!(std::fabs(got[r * c + i] - want) <= tol) && bad++ < 3)
            ADD_FAILURE() << GetParam().label << " c=" << c << " offset=" << offset << ": y[" << r
                          << "][" << i << "] = " << got[r * c + i] << ", want " << want;
        }
      }
    }
}

// In place (y == x), as the plan may bind it: equal to the out-of-place result.
TEST_P(F32VLayerNormTest, InPlace) {
  std::vector<float> x(3 * 40), gamma(40, 1.5f), beta(40, -0.25f);
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i % 11) - 4.f;
  std::vector<float> want(x.size());
  GetParam().fn(3, 40, x.data(), gamma.data(), beta.data(), 1e-5f, want.data());
  GetParam().fn(3, 40, x.data(), gamma.data(), beta.data(), 1e-5f, x.data());
  EXPECT_EQ(x, want);
}

INSTANTIATE_TEST_SUITE_P(
    All, F32VLayerNormTest,
    ::testing::Values(LayerNormCase{&ukernel::f32_vlayernorm__scalar, Isa::kScalar, "scalar"},
                      LayerNormCase{&ukernel::f32_vlayernorm__avx2, Isa::kAvx2, "avx2"},
                      LayerNormCase{&ukernel::f32_vlayernorm__avx512, Isa::kAvx512, "avx512"}),
    [](const auto& info) { return info.param.label; });

}  // namespace
}  // namespace dlas::test

// Every f32 softmax kernel against a double-precision evaluation, on row lengths around the
// vector widths (tails, a 49-token window, ViT's 197 tokens), rows of large magnitude (the
// maximum's subtraction) and rows whose entries are far below their maximum (exponentials
// that underflow to 0), with nothing written past the rows; in place too.
//   build/dlas_tests --gtest_filter='*F32VSoftmax*'
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "algo/microkernels/f32-vsoftmax/f32_vsoftmax.h"

namespace dlas::test {
namespace {

struct SoftmaxCase {
  ukernel::F32VSoftmaxFn fn;
  Isa needs;
  std::string label;
};

class F32VSoftmaxTest : public ::testing::TestWithParam<SoftmaxCase> {
 protected:
  void SetUp() override {
    if (!isa_supported(GetParam().needs))
      GTEST_SKIP() << "CPU lacks " << isa_name(GetParam().needs);
  }
};

TEST_P(F32VSoftmaxTest, RowLengthsScalesAndTails) {
  for (size_t c : {1, 2, 7, 8, 9, 15, 16, 17, 31, 33, 49, 197})
    for (float scale : {1.f, 30.f, 300.f}) {
      const size_t rows = 4, n = rows * c;
      std::mt19937 rng(static_cast<uint32_t>(c * 7 + static_cast<size_t>(scale)));
      std::uniform_real_distribution<float> d(-1.f, 1.f);
      std::vector<float> x(n + 1);
      for (float& v : x) v = d(rng) * scale + 1000.f * (scale == 300.f);
      std::vector<float> got(n + 1, 7.f);
      GetParam().fn(rows, c, x.data(), got.data());
      EXPECT_EQ(got[n], 7.f) << "wrote past the rows";
      int bad = 0;
      for (size_t r = 0; r < rows; ++r) {
        // x - max rounded to f32 as the kernels (and the reference runtime) subtract.
        float mx = x[r * c];
        double sum = 0, got_sum = 0;
        for (size_t i = 1; i < c; ++i) mx = std::max(mx, x[r * c + i]);
        for (size_t i = 0; i < c; ++i) sum += std::exp(static_cast<double>(x[r * c + i] - mx));
        for (size_t i = 0; i < c; ++i) {
          const double want = std::exp(static_cast<double>(x[r * c + i] - mx)) / sum;
          got_sum += got[r * c + i];
          // A few f32 roundings of each exponential and of the row's f32 sum, relative;
          // values below the smallest normal are allowed their absolute rounding.
          const double tol = (4 + static_cast<double>(c) / 8) * 1.2e-7 * want + 1e-38;
          if (!(std::fabs(got[r * c + i] - want) <= tol) && bad++ < 3)
            ADD_FAILURE() << GetParam().label << " c=" << c << " scale=" << scale << ": y[" << r
                          << "][" << i << "] = " << got[r * c + i] << ", want " << want;
        }
        EXPECT_NEAR(got_sum, 1.0, 1e-5) << GetParam().label << " c=" << c;
      }
    }
}

// In place (y == x), as the plan may bind it: equal to the out-of-place result.
TEST_P(F32VSoftmaxTest, InPlace) {
  std::vector<float> x(3 * 50);
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i % 13) * 0.7f - 4.f;
  std::vector<float> want(x.size());
  GetParam().fn(3, 50, x.data(), want.data());
  GetParam().fn(3, 50, x.data(), x.data());
  EXPECT_EQ(x, want);
}

INSTANTIATE_TEST_SUITE_P(
    All, F32VSoftmaxTest,
    ::testing::Values(SoftmaxCase{&ukernel::f32_vsoftmax__scalar, Isa::kScalar, "scalar"},
                      SoftmaxCase{&ukernel::f32_vsoftmax__avx2, Isa::kAvx2, "avx2"},
                      SoftmaxCase{&ukernel::f32_vsoftmax__avx512, Isa::kAvx512, "avx512"}),
    [](const auto& info) { return info.param.label; });

}  // namespace
}  // namespace dlas::test

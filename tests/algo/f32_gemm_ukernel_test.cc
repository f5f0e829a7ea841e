// Every f32 GEMM microkernel in f32_gemm.inc (and the AVX-512 kernels' 16-lane logic
// compiled for AVX2) for every m <= MR, n <= NR, several k, against a double reference.
#include <gtest/gtest-spi.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "algo/avx512_logic.h"
#include "algo/gemm_microkernel_tester.h"
#include "algo/microkernels/f32-gemm/f32_gemm.h"

namespace dlas::test {
namespace {

struct Case {
  ukernel::F32GemmUkernel u;
  std::string label;
};

std::vector<Case> all_cases() {
  std::vector<Case> out;
  for (const auto& u : ukernel::f32_gemm_ukernels()) out.push_back({u, u.name});
  for (const auto& u : avx512_logic_gemm_ukernels())
    out.push_back({u, std::string(u.name) + "_logic_on_avx2"});
  return out;
}

class F32GemmUkernelTest : public ::testing::TestWithParam<Case> {
 protected:
  void SetUp() override {
    if (!isa_supported(GetParam().u.isa))
      GTEST_SKIP() << "CPU lacks " << isa_name(GetParam().u.isa);
  }
  GemmMicrokernelTester tester() const { return GemmMicrokernelTester().kernel(GetParam().u); }
  void run(const GemmMicrokernelTester& t) const { t.test(GetParam().u.fn, GetParam().label); }
};

// Every tile shape m x n (edges included) for k = 1, a few below/above the unroll, odd.
TEST_P(F32GemmUkernelTest, EveryTileShape) {
  const auto& u = GetParam().u;
  for (size_t k : {1, 2, 5, 16, 37})
    for (int m = 1; m <= u.mr; ++m)
      for (int n = 1; n <= u.nr; ++n) run(tester().m(m).n(n).k(k).bias(true));
}

TEST_P(F32GemmUkernelTest, NoBiasStartsAtZero) {
  const auto& u = GetParam().u;
  for (int n : {1, u.nr}) run(tester().m(u.mr).n(n).k(9));
}

TEST_P(F32GemmUkernelTest, AccumulateIgnoresBias) {
  const auto& u = GetParam().u;
  for (int m = 1; m <= u.mr; ++m)
    for (int n : {1, u.nr / 2 + 1, u.nr}) run(tester().m(m).n(n).k(11).accumulate(true).bias(true));
}

TEST_P(F32GemmUkernelTest, Clamp) {
  const auto& u = GetParam().u;
  for (int m : {1, u.mr})
    for (int n = 1; n <= u.nr; ++n) {
      run(tester().m(m).n(n).k(13).bias(true).clamp(-0.5f, 0.75f));
      run(tester().m(m).n(n).k(13).accumulate(true).clamp(0.f, 1.f));
    }
}

TEST_P(F32GemmUkernelTest, ScatteredBRowsAndWideLdc) {
  const auto& u = GetParam().u;
  for (int m : {1, u.mr})
    for (int n : {1, u.nr - 1, u.nr}) {
      if (n < 1) continue;
      run(tester().m(m).n(n).k(23).bias(true).scattered_b(true).ldc(u.nr * 3 + 1));
    }
}

TEST_P(F32GemmUkernelTest, LongK) {
  const auto& u = GetParam().u;
  run(tester().m(u.mr).n(u.nr).k(1000).bias(true).seed(3));
}

// The tester must catch a wrong kernel: one that drops the last k step fails.
void drops_last_k(size_t m, size_t n, size_t k, const float* a, const float* b, const int64_t* off,
                  float* c, size_t ldc, const float* bias, bool acc, float mn, float mx) {
  ukernel::f32_gemm_4x8__scalar(m, n, k - 1, a, b, off, c, ldc, bias, acc, mn, mx);
}

TEST(GemmMicrokernelTester, DetectsAWrongKernel) {
  ::testing::TestPartResultArray failures;
  bool ok;
  {
    ::testing::ScopedFakeTestPartResultReporter intercept(
        ::testing::ScopedFakeTestPartResultReporter::INTERCEPT_ONLY_CURRENT_THREAD, &failures);
    ok = GemmMicrokernelTester().mr(4).nr(8).m(4).n(8).k(5).test(&drops_last_k, "bad");
  }
  EXPECT_FALSE(ok);
  EXPECT_GT(failures.size(), 0);
}

INSTANTIATE_TEST_SUITE_P(All, F32GemmUkernelTest, ::testing::ValuesIn(all_cases()),
                         [](const auto& info) { return info.param.label; });

}  // namespace
}  // namespace dlas::test

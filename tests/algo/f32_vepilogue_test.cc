// Every f32 epilogue kernel (and the AVX-512 kernel's 16-lane logic compiled for AVX2)
// against the scalar kernel for every activation, with and without residual, on lengths
// around the vector widths (tails). Tolerance: 8 ulp of the result for the smooth
// activations (vector exp vs the double-precision truth), plus 8 eps of the pre-activation
// magnitude where an FMA may be contracted (HardSigmoid/HardSwish), plus 1e-37 absolute (results
// below FLT_MIN).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "algo/avx512_logic.h"
#include "algo/microkernels/f32-vepilogue/f32_vepilogue.h"

namespace dlas::test {
namespace {

struct EpiCase {
  ukernel::F32VEpilogueFn fn;
  Isa needs;
  std::string label;
};

std::vector<EpiCase> epilogue_cases() {
  return {{&ukernel::f32_vepilogue__avx2, Isa::kAvx2, "avx2"},
          {&ukernel::f32_vepilogue__avx512, Isa::kAvx512, "avx512"},
          {avx512_logic_vepilogue(), Isa::kAvx2, "avx512_logic_on_avx2"}};
}

class F32VEpilogueTest : public ::testing::TestWithParam<EpiCase> {
 protected:
  void SetUp() override {
    if (!isa_supported(GetParam().needs))
      GTEST_SKIP() << "CPU lacks " << isa_name(GetParam().needs);
  }
};

const Activation kActs[] = {Activation::kNone,      Activation::kRelu, Activation::kClip,
                            Activation::kSigmoid,   Activation::kSilu, Activation::kHardSigmoid,
                            Activation::kHardSwish, Activation::kErf,  Activation::kGelu};

bool check(const EpiCase& c, Activation act, size_t n, bool residual, float scale, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-scale, scale);
  std::vector<float> y(n + 1), r(n + 1);
  for (float& v : y) v = dist(rng);
  for (float& v : r) v = dist(rng);
  const float bias = 0.25f,
              p0 = act == Activation::kHardSigmoid ? 0.2f
                   : act == Activation::kGelu      ? static_cast<float>(std::sqrt(2.0))
                                                   : -1.5f,
              p1 = act == Activation::kHardSigmoid ? 0.5f : 2.f;
  std::vector<float> want = y, got = y;
  ukernel::f32_vepilogue__scalar(n, want.data(), bias, residual ? r.data() : nullptr, act, p0, p1);
  c.fn(n, got.data(), bias, residual ? r.data() : nullptr, act, p0, p1);
  // Sigmoid/SiLU: the double-precision truth (the scalar kernel's float exp overflows
  // for x < -88.7 and returns -0 where the true SiLU is a tiny subnormal-range value).
  if (act == Activation::kSigmoid || act == Activation::kSilu)
    for (size_t i = 0; i < n; ++i) {
      float v = y[i] + bias;
      if (residual) v += r[i];
      const double sig = 1.0 / (1.0 + std::exp(-(double)v));
      want[i] = static_cast<float>(act == Activation::kSigmoid ? sig : v * sig);
    }
  const double eps = std::numeric_limits<float>::epsilon();
  int bad = 0;
  for (size_t i = 0; i <= n; ++i) {
    const double pre = std::fabs(y[i]) + std::fabs(bias) + (residual ? std::fabs(r[i]) : 0.0);
    const bool fma = act == Activation::kHardSigmoid || act == Activation::kHardSwish;
    // erf: the vector kernel's approximation (f32vec_erf) is within 1.5e-7 absolute.
    const double tol = 8 * eps * std::fabs(want[i]) + (fma ? 8 * eps * pre : 0.0) +
                       (act == Activation::kErf ? 1.5e-7 : 0.0) +
                       (act == Activation::kGelu ? 1.5e-7 * pre : 0.0) + 1e-37;
    const bool ok = i == n ? got[i] == y[i]  // past the end: untouched
                           : std::fabs((double)got[i] - want[i]) <= tol;
    if (!ok && bad++ < 3)
      ADD_FAILURE() << c.label << " " << activation_name(act) << " n=" << n
                    << (residual ? " +res" : "") << ": y[" << i << "] = " << got[i] << ", want "
                    << want[i];
  }
  return bad == 0;
}

TEST_P(F32VEpilogueTest, EveryActivationAndTail) {
  for (Activation act : kActs)
    for (size_t n : {0, 1, 3, 7, 8, 9, 15, 16, 17, 31, 33, 100})
      for (bool res : {false, true}) check(GetParam(), act, n, res, 4.f, 11 + n);
}

TEST_P(F32VEpilogueTest, WideRangeForExp) {
  // Saturation, the exp clamp, and large |x| where sigmoid -> 0 / 1.
  for (Activation act : {Activation::kSigmoid, Activation::kSilu})
    for (float scale : {1.f, 20.f, 120.f}) check(GetParam(), act, 257, false, scale, 5);
}

INSTANTIATE_TEST_SUITE_P(All, F32VEpilogueTest, ::testing::ValuesIn(epilogue_cases()),
                         [](const auto& info) { return info.param.label; });

}  // namespace
}  // namespace dlas::test

// The int8 `depthwise` conv on every ISA level x the generated depthwise problems (3x3,
// 5x5, stride 2, multiplier 2) plus mobilenet-like shapes x u8/s8 x relu/clip/residual, at
// 1 and 2 threads, EXACTLY equal to reference_qconv; the 16-lane (AVX-512) kernel's logic
// through an AVX2 instantiation.  build/dlas_tests --gtest_filter='QConvDepthwise*'
#include <gtest/gtest.h>

#include "algo/conv/qs8_common.h"
#include "algo/conv_tester.h"
#include "algo/qs8_logic.h"

namespace dlas::test {
namespace {

std::vector<ConvProblem> depthwise_problems() {
  std::vector<ConvProblem> out;
  for (const ConvProblem& c : generated_conv_problems())
    if (c.groups == c.c && c.groups > 1) out.push_back(c);
  ConvProblem m = out.front();  // mobilenet-like: 32 channels 17x19, stride 2, pad 1
  m.c = m.k = m.groups = 32, m.h = 17, m.w = 19, m.stride_h = m.stride_w = 2;
  out.push_back(m);
  m.stride_h = m.stride_w = 1, m.h = 5, m.w = 40, m.has_bias = false;  // wide rows, no bias
  out.push_back(m);
  return out;
}

void run_all(Isa isa, ukernel::QS8DwFn fn) {
  const ConvAlgorithm& algo = *find_conv_algorithm("depthwise");
  uint32_t seed = 500;
  int checked = 0;
  for (const ConvProblem& c : depthwise_problems())
    for (const QVariant& v : qconv_variants()) {
      ConvTester t;
      t.problem(c).int8(v).seed(seed++);
      ASSERT_TRUE(algo.supports(t.problem())) << t.problem().key();
      for (int threads : {2, 1}) {
        t.threads(threads);
        const bool exact = fn ? t.test_with(
                                    [&](const ConvProblem& p, const ConvWeights& w) {
                                      return qconv_detail::prepare_depthwise_qconv(p, w, {}, fn);
                                    },
                                    std::string("depthwise ") + isa_name(isa))
                              : t.test(algo, isa);
        if (!exact) return;
        ++checked;
      }
    }
  EXPECT_EQ(checked, static_cast<int>(depthwise_problems().size() * qconv_variants().size() * 2));
}

class QConvDepthwise : public ::testing::TestWithParam<Isa> {};

TEST_P(QConvDepthwise, EqualsTheOracle) {
  if (!isa_supported(GetParam())) GTEST_SKIP() << isa_name(GetParam()) << " not supported here";
  run_all(GetParam(), nullptr);
}

INSTANTIATE_TEST_SUITE_P(Isa, QConvDepthwise, ::testing::ValuesIn(kAllIsas),
                         [](const ::testing::TestParamInfo<Isa>& i) {
                           return isa_test_name(i.param);
                         });

TEST(QConvDepthwiseLogic, SixteenLaneKernelEqualsTheOracle) {
  if (!isa_supported(Isa::kAvx2)) GTEST_SKIP() << "the emulation is built for AVX2";
  run_all(Isa::kAvx2, qs8_logic_dwconv_16lane());
}

TEST(QConvDepthwise, RejectsNonDepthwise) {
  ConvProblem p = ConvTester()
                      .problem(generated_conv_problems().front())
                      .int8(qconv_variants().front())
                      .problem();
  EXPECT_FALSE(find_conv_algorithm("depthwise")->supports(p));
  EXPECT_EQ(auto_conv_algorithm(p, active_isa()).name(), "gemm");
  p.c = p.k = p.groups = 8;
  EXPECT_EQ(auto_conv_algorithm(p, active_isa()).name(), "depthwise");
}

}  // namespace
}  // namespace dlas::test

// The int8 `depthwise` conv on every ISA level x the generated depthwise problems (3x3,
// 5x5, stride 2, multiplier 2) plus mobilenet-like shapes and the pair-row kernels' edges
// (tiny outputs, bands, strides 1-3, dilation, even / 1-wide / 7x7 kernels, asymmetric
// padding, multipliers 2-3) x u8/s8 x relu/clip/residual, at
// 1 and 2 threads, EXACTLY equal to reference_qconv, with output pixels as lanes (lanes=0)
// and channels as lanes (lanes=1); the 16-lane (AVX-512) kernels' logic through AVX2
// instantiations.  build/dlas_tests --gtest_filter='QConvDepthwise*'
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
  // The pair-row kernels' edges: c, h, w, k (multiplier k / c), kernel, stride, pad (t, l,
  // b, r), dilation.
  auto add = [&](int64_t c, int64_t h, int64_t w, int64_t k, int64_t kh, int64_t kw, int64_t s,
                 int64_t pt, int64_t pl, int64_t pb, int64_t pr, int64_t d) {
    ConvProblem q = out.front();
    q.c = q.groups = c, q.k = k, q.h = h, q.w = w, q.kh = kh, q.kw = kw;
    q.stride_h = q.stride_w = s, q.dil_h = q.dil_w = d;
    q.pad_t = pt, q.pad_l = pl, q.pad_b = pb, q.pad_r = pr;
    q.has_bias = true;
    out.push_back(q);
  };
  add(5, 3, 3, 5, 3, 3, 1, 0, 0, 0, 0, 1);    // 1x1 output
  add(7, 4, 4, 7, 3, 3, 2, 1, 1, 1, 1, 1);    // 2x2 output, stride 2
  add(3, 40, 75, 3, 3, 3, 1, 1, 1, 1, 1, 1);  // several bands; 75 = 2 blocks + tails
  add(3, 37, 70, 6, 3, 3, 2, 1, 1, 1, 1, 1);  // stride 2 bands, multiplier 2, odd height
  add(4, 16, 17, 4, 3, 3, 3, 1, 1, 1, 1, 1);  // stride 3: a pair row per tap pair
  add(3, 15, 18, 3, 3, 3, 2, 2, 2, 2, 2, 2);  // stride 2, dilation 2: paired by copy
  add(3, 19, 21, 3, 3, 3, 2, 3, 3, 3, 3, 3);  // stride 2, dilation 3 (tap step 3)
  add(5, 23, 23, 5, 5, 5, 2, 2, 2, 2, 2, 1);  // 5x5 stride 2 (EfficientNet)
  add(2, 12, 13, 6, 7, 7, 1, 2, 0, 0, 3, 1);  // 7x7 (general loop), multiplier 3, asymmetric
  add(3, 9, 10, 3, 4, 4, 2, 1, 2, 2, 1, 1);   // even kernel: a zero-weight half pair
  add(3, 11, 9, 3, 3, 1, 1, 1, 0, 1, 0, 1);   // 3x1
  add(3, 6, 35, 3, 1, 3, 1, 0, 1, 0, 1, 1);   // 1x3
  add(9, 8, 9, 9, 3, 3, 1, 3, 3, 0, 0, 1);    // padding wider than the kernel reach
  add(3, 20, 20, 3, 3, 3, 1, 1, 1, 1, 1, 9);  // a band of one output row (dilation 9)
  add(3, 9, 9, 3, 1, 1, 2, 0, 0, 0, 0, 1);    // 1x1 stride 2: skipped input rows
  return out;
}

// Every problem x variant x {2, 1} threads through `run` (ConvTester -> exact?).
template <class Run>
void run_all(Run run) {
  uint32_t seed = 500;
  int checked = 0;
  for (const ConvProblem& c : depthwise_problems())
    for (const QVariant& v : qconv_variants()) {
      ConvTester t;
      t.problem(c).int8(v).seed(seed++);
      ASSERT_TRUE(find_conv_algorithm("depthwise")->supports(t.problem())) << t.problem().key();
      for (int threads : {2, 1}) {
        t.threads(threads);
        if (!run(t)) return;
        ++checked;
      }
    }
  EXPECT_EQ(checked, static_cast<int>(depthwise_problems().size() * qconv_variants().size() * 2));
}

class QConvDepthwise : public ::testing::TestWithParam<Isa> {};

// Both lane orders (where the channels kernel applies: multiplier 1) on the path's kernels.
TEST_P(QConvDepthwise, EqualsTheOracle) {
  const Isa isa = GetParam();
  if (!isa_supported(isa)) GTEST_SKIP() << isa_name(isa) << " not supported here";
  if (repeats_path_below(isa, [](Isa i) { return ukernel::qs8_dwconv_for(i); }) &&
      repeats_path_below(isa, [](Isa i) { return ukernel::qs8_dwchan_for(i); }))
    GTEST_SKIP() << isa_name(isa) << " runs the int8 depthwise kernels of the path below";
  const ConvAlgorithm& algo = *find_conv_algorithm("depthwise");
  for (int lanes : {0, 1}) {
    SCOPED_TRACE("lanes=" + std::to_string(lanes));
    run_all([&](const ConvTester& t) {
      const bool has = algo.knob_space(t.problem(), isa).find("lanes") != nullptr;
      if (lanes == 1 && !has) return true;  // the plane kernel only (multiplier > 1)
      return has ? t.test(algo, isa, {{"lanes", lanes}}) : t.test(algo, isa);
    });
  }
}

INSTANTIATE_TEST_SUITE_P(Isa, QConvDepthwise, ::testing::ValuesIn(kAllIsas),
                         [](const ::testing::TestParamInfo<Isa>& i) {
                           return isa_test_name(i.param);
                         });

TEST(QConvDepthwiseLogic, SixteenLaneKernelEqualsTheOracle) {
  if (!isa_supported(Isa::kAvx2)) GTEST_SKIP() << "the emulation is built for AVX2";
  run_all([](const ConvTester& t) {
    return t.test_with(
        [](const ConvProblem& p, const ConvWeights& w) {
          return qconv_detail::prepare_depthwise_qconv(p, w, {}, qs8_logic_dwconv_16lane());
        },
        "depthwise avx512 (emulated)");
  });
}

TEST(QConvDepthwiseLogic, SixteenChannelKernelEqualsTheOracle) {
  if (!isa_supported(Isa::kAvx2)) GTEST_SKIP() << "the emulation is built for AVX2";
  run_all([](const ConvTester& t) {
    const ConvProblem& p = t.problem();
    if (p.k != p.c || p.kh * p.kw > 64) return true;  // the plane kernel's problems
    return t.test_with(
        [](const ConvProblem& q, const ConvWeights& w) {
          return qconv_detail::prepare_depthwise_qconv_chan(q, w, qs8_logic_dwchan_16lane());
        },
        "depthwise lanes=1 avx512 (emulated)");
  });
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

// The int8 `gemm` conv: every ISA level (real kernels where the CPU has the path; the
// other paths' kernels through exact instruction models, qs8_logic.h) x generated problems
// x u8/s8 in/out x relu/clip/residual x sampled knobs, at 1 and 2 threads, EXACTLY equal to
// reference_qconv. On an AVX-512 / AMX machine:
//   build/dlas_tests --gtest_filter='QConv*'
#include <gtest/gtest.h>

#include "algo/conv/qs8_common.h"
#include "algo/conv_tester.h"
#include "algo/qs8_logic.h"
#include "dlas/hw/isa.h"

namespace dlas::test {
namespace {

// Default knobs plus sampled points (every microkernel of the path at least once), at
// 2 threads; the default also at 1 thread.
void run_generated(const ConvAlgorithm& algo, Isa isa) {
  uint32_t seed = 1;
  int64_t idx = 0;
  for (const ConvProblem& c : generated_conv_problems())
    for (const QVariant& v : qconv_variants()) {
      ConvTester t;
      t.problem(c).int8(v).seed(seed++);
      const ConvProblem p = t.problem();
      if (!algo.supports(p)) continue;
      const KnobSpace space = algo.knob_space(p, isa);
      std::vector<Knobs> more;
      if (space.size() > 1) more.push_back(space.point((idx++ * 7919 + 13) % space.size()));
      if (const KnobSpec* uk = space.find("ukernel")) {
        Knobs k = algo.default_knobs(p, isa);
        k["ukernel"] = uk->values[static_cast<size_t>(idx) % uk->values.size()];
        k["parallel"] = idx % 2;
        more.push_back(k);
      }
      if (!t.test_points(algo, isa, more)) return;
    }
}

class QConvGemm : public ::testing::TestWithParam<Isa> {};

bool gemm_repeats_path_below(Isa isa) {
  return repeats_path_below(isa, [](Isa i) { return ukernel::qs8_gemm_ukernels_for(i); });
}

TEST_P(QConvGemm, GeneratedProblemsEqualTheOracle) {
  if (!isa_supported(GetParam())) GTEST_SKIP() << isa_name(GetParam()) << " not supported here";
  if (gemm_repeats_path_below(GetParam()))
    GTEST_SKIP() << isa_name(GetParam()) << " runs the int8 gemm kernels of the path below";
  run_generated(*find_conv_algorithm("gemm"), GetParam());
}

TEST_P(QConvGemm, ExtremeValuesDoNotOverflow) {
  const Isa isa = GetParam();
  if (!isa_supported(isa)) GTEST_SKIP() << isa_name(isa) << " not supported here";
  const ConvAlgorithm& algo = *find_conv_algorithm("gemm");
  for (DType xt : {DType::kU8, DType::kS8}) {
    ConvTester t;
    t.extreme_int8(xt).threads(2);
    const ConvProblem p = t.problem();
    const KnobSpace space = algo.knob_space(p, isa);
    for (int64_t u : space.find("ukernel")->values) {
      Knobs k = algo.default_knobs(p, isa);
      k["ukernel"] = u;
      EXPECT_TRUE(t.test(algo, isa, k));
    }
  }
}

// 1x1 stride-1 unpadded convs shuffle whole pixel panels straight from the input planes:
// channel counts off the 4-channel groups (the zero-point row), groups, u8 and s8 inputs
// (the flip), planes of whole panels only and with an edge panel, every microkernel.
TEST_P(QConvGemm, PointwiseConvsReadThePlanesInPlace) {
  const Isa isa = GetParam();
  if (!isa_supported(isa)) GTEST_SKIP() << isa_name(isa) << " not supported here";
  if (gemm_repeats_path_below(isa))
    GTEST_SKIP() << isa_name(isa) << " runs the int8 gemm kernels of the path below";
  const ConvAlgorithm& algo = *find_conv_algorithm("gemm");
  struct Case {
    int64_t c, k, h, w, groups;
  };
  uint32_t seed = 40;
  for (const Case& cs : {Case{13, 24, 8, 8, 1}, Case{64, 48, 16, 16, 1}, Case{30, 20, 5, 7, 2},
                         Case{6, 10, 12, 12, 1}})
    for (const QVariant& v : qconv_variants()) {
      ConvTester t;
      t.channels(cs.c, cs.k).input(cs.h, cs.w).kernel(1, 1).groups(cs.groups).int8(v).threads(2);
      t.seed(seed++);
      const ConvProblem p = t.problem();
      const KnobSpace space = algo.knob_space(p, isa);
      for (int64_t u : space.find("ukernel")->values) {
        Knobs k = algo.default_knobs(p, isa);
        k["ukernel"] = u;
        EXPECT_TRUE(t.test(algo, isa, k)) << p.key() << " ukernel " << u;
      }
    }
}

INSTANTIATE_TEST_SUITE_P(Isa, QConvGemm, ::testing::ValuesIn(kAllIsas),
                         [](const ::testing::TestParamInfo<Isa>& i) {
                           return isa_test_name(i.param);
                         });

// The kernels of the other paths (emulated) through the whole algorithm.
TEST(QConvGemmLogic, EmulatedKernelsEqualTheOracle) {
  if (!isa_supported(Isa::kAvx2)) GTEST_SKIP() << "the emulations are built for AVX2";
  ASSERT_FALSE(qs8_logic_gemm_ukernels().empty());
  const ConvAlgorithm& algo = *find_conv_algorithm("gemm");
  uint32_t seed = 100;
  for (const ukernel::QS8GemmUkernel& uk : qs8_logic_gemm_ukernels()) {
    SCOPED_TRACE(uk.name);
    int64_t idx = 0;
    for (const ConvProblem& c : generated_conv_problems())
      for (const QVariant& v : qconv_variants()) {
        ConvTester t;
        t.problem(c).int8(v).seed(seed++).threads(2);
        Knobs k = algo.default_knobs(t.problem(), Isa::kScalar);
        k["parallel"] = idx % 2;
        k["loop_order"] = (idx / 2) % 2;
        k["nc"] = idx % 3 == 0 ? 32 : 256;
        ++idx;
        if (!t.test_with(
                [&](const ConvProblem& p, const ConvWeights& w) {
                  return qconv_detail::prepare_gemm_qconv(p, w, k, uk);
                },
                uk.name, k))
          return;
      }
    for (DType xt : {DType::kU8, DType::kS8}) {
      ConvTester t;
      t.extreme_int8(xt).threads(2);
      const Knobs k = algo.default_knobs(t.problem(), Isa::kScalar);
      EXPECT_TRUE(t.test_with(
          [&](const ConvProblem& p, const ConvWeights& w) {
            return qconv_detail::prepare_gemm_qconv(p, w, k, uk);
          },
          std::string(uk.name) + " extreme", k));
    }
  }
}

// Regression: 13 groups of one channel, 9x9, 5x5 taps, pad 2. A block of nc = 32 pixels
// ends one pixel into output row 7 (pixel 63), and taps with dx < 0 have their first valid
// column past that one-pixel segment; im2col padded past the segment, the last scratch row
// overflowing by one byte into the next thread's scratch row 0 (the first pixel of its
// block), so 2 threads gave wrong outputs only sometimes. One thread must not write past
// workspace_bytes (deterministic), and 2 threads must be exact on every one of many runs.
TEST(QConvGemmRegression, GroupedBlockEndingInAShortRowSegmentIsExactEveryRun) {
  ConvTester t;
  t.problem(ConvProblem::from_key("c13_h9_w9_k13_5x5_s1x1_p2x2x2x2_d1x1_g13"))
      .int8({DType::kS8, DType::kU8, -5, 10, Activation::kClip, false})
      .bias(true)
      .seed(5)
      .threads(1);
  const ConvProblem p = t.problem();
  const ConvData d = t.data();
  std::vector<uint8_t> want(d.r.size());
  reference_qconv(p, d.x.data(), d.weights(p), nullptr, want.data());
  const ConvAlgorithm& algo = *find_conv_algorithm("gemm");
  ThreadPool pool(2);
  int checked = 0;
  for (Isa isa : kAllIsas) {
    if (!isa_supported(isa)) continue;
    const KnobSpace space = algo.knob_space(p, isa);
    for (int64_t u : space.find("ukernel")->values)
      for (int64_t nc : {32, 64})
        for (int64_t order : {0, 1})
          for (int64_t par : {0, 1}) {
            const Knobs k = {{"ukernel", u}, {"nc", nc}, {"loop_order", order}, {"parallel", par}};
            const std::string what = std::string(isa_name(isa)) + " " + knobs_to_string(k);
            ASSERT_TRUE(t.test(algo, isa, k)) << what << " threads=1";
            const auto prepared = algo.prepare(p, d.weights(p), k, isa);
            const size_t wsb = prepared->workspace_bytes(2);
            std::vector<uint8_t> ws(wsb + kWorkspaceGuard, kGuardByte), got(want.size());
            for (int it = 0; it < 50; ++it) {
              std::fill(got.begin(), got.end(), uint8_t{0xA5});
              prepared->run(d.x.data(), got.data(), nullptr, ws.data(), pool);
              ASSERT_EQ(got, want) << what << " threads=2 run " << it;
              for (size_t i = wsb; i < ws.size(); ++i)
                ASSERT_EQ(ws[i], kGuardByte) << what << " workspace byte " << i;
            }
            ++checked;
          }
  }
  EXPECT_GT(checked, 0);
}

// Every kernel of a path above AVX2 has its emulated twin (derived from qs8_gemm.inc).
TEST(QConvGemmLogic, EmulatedListCoversEveryPathAboveAvx2) {
  int vnni = 0, pairs512 = 0, amx = 0;
  for (const ukernel::QS8GemmUkernel& uk : qs8_logic_gemm_ukernels()) {
    const ukernel::QS8GemmUkernel* real = ukernel::find_qs8_gemm(uk.name);
    ASSERT_NE(real, nullptr) << uk.name;
    EXPECT_GT(real->isa, Isa::kAvx2);
    vnni += real->kr == 4 && real->kb == 1;
    pairs512 += real->kr == 2;
    amx += real->kb == 16;
  }
  EXPECT_GE(vnni, 2);
  EXPECT_GE(pairs512, 1);
  EXPECT_EQ(amx, 1);
}

}  // namespace
}  // namespace dlas::test

// int8 convs on 8-bit channel blocks (nchw16c and nchw8c holding u8 / s8): the blocked
// `direct` (qs8-nchwc tiles: vpdpbusd on 16-channel blocks, vpmaddwd on the widened 8-channel
// ones) and `depthwise` (the channels-as-lanes kernels without transposes), on every ISA
// level and both block sizes -- the kernels where the path has them for the block, the NCHW
// conv between reorders where it does not -- x generated problems x u8/s8 in/out x relu/clip/
// residual x sampled knobs, at 2 threads, EXACTLY equal to reference_qconv. Padding lanes of
// the blocked inputs hold 77, so a kernel that lets them reach a real lane fails.
//   build/dlas_tests --gtest_filter='QConvNchwc*'
#include <gtest/gtest.h>

#include <utility>

#include "algo/conv_tester.h"
#include "algo/microkernels/qs8-nchwc/qs8_nchwc.h"
#include "algo/microkernels/qs8-wino/qs8_wino.h"
#include "dlas/algo/layout.h"
#include "dlas/hw/isa.h"
#include "dlas/hw/thread_pool.h"

namespace dlas::test {
namespace {

class QConvNchwc : public ::testing::TestWithParam<Isa> {};

// Every generated problem x int8 variant the algorithm supports on blocks of both sizes, at
// its default knobs and at one sampled point of its space.
int run_blocked(const ConvAlgorithm& algo, Isa isa) {
  uint32_t seed = 11;
  int64_t idx = 0;
  int tested = 0;
  for (Layout l : {Layout::kNchw16c, Layout::kNchw8c})
    for (const ConvProblem& c : generated_conv_problems())
      for (const QVariant& v : qconv_variants()) {
        ConvTester t;
        t.problem(c).int8(v).seed(seed++).layouts(l, l).threads(2);
        const ConvProblem p = t.problem();
        if (!algo.supports(p)) continue;
        const KnobSpace space = algo.knob_space(p, isa);
        std::vector<Knobs> more;
        if (space.size() > 0) more.push_back(space.point((idx++ * 7919 + 13) % space.size()));
        if (!t.test_points(algo, isa, more)) return tested;
        ++tested;
      }
  return tested;
}

TEST_P(QConvNchwc, DirectOnBlocksEqualsTheOracle) {
  const Isa isa = GetParam();
  if (!isa_supported(isa)) GTEST_SKIP() << isa_name(isa) << " not supported here";
  EXPECT_GT(run_blocked(*find_conv_algorithm("direct"), isa), 0);
}

// The exact int8 Winograd F(2x2, 3x3) on 8-channel blocks (qs8-wino): the AVX2 transforms
// and pair tiles where the path has AVX2, the NCHW conv between reorders below it.
TEST_P(QConvNchwc, WinogradOnBlocksEqualsTheOracle) {
  const Isa isa = GetParam();
  if (!isa_supported(isa)) GTEST_SKIP() << isa_name(isa) << " not supported here";
  EXPECT_GT(run_blocked(*find_conv_algorithm("winograd"), isa), 0);
}

TEST_P(QConvNchwc, DepthwiseOnBlocksEqualsTheOracle) {
  const Isa isa = GetParam();
  if (!isa_supported(isa)) GTEST_SKIP() << isa_name(isa) << " not supported here";
  EXPECT_GT(run_blocked(*find_conv_algorithm("depthwise"), isa), 0);
}

// The longest reduction int32 allows, x at the top of u8, every weight -128: the tiles'
// sums stay exact.
TEST_P(QConvNchwc, ExtremeValuesDoNotOverflow) {
  const Isa isa = GetParam();
  if (!isa_supported(isa)) GTEST_SKIP() << isa_name(isa) << " not supported here";
  for (Layout l : {Layout::kNchw16c, Layout::kNchw8c})
    EXPECT_TRUE(ConvTester()
                    .extreme_int8(DType::kU8)
                    .layouts(l, l)
                    .threads(2)
                    .test(*find_conv_algorithm("direct"), isa))
        << layout_name(l);
  // Winograd's transformed sums are 4x the conv's: its longest exact reduction.
  ConvProblem c;
  c.c = ukernel::kQS8WinoMaxChannels, c.k = 8, c.h = c.w = 5, c.kh = c.kw = 3;
  c.pad_t = c.pad_l = c.pad_b = c.pad_r = 1;
  c.has_bias = true;
  EXPECT_TRUE(ConvTester()
                  .extreme_int8(DType::kU8)
                  .problem(c)
                  .layouts(Layout::kNchw8c, Layout::kNchw8c)
                  .threads(2)
                  .test(*find_conv_algorithm("winograd"), isa));
  c.c += 1;
  c.set_int8({0.1f, 3, DType::kU8}, {0.2f, 0, DType::kU8});
  c.set_layouts(Layout::kNchw8c, Layout::kNchw8c);
  EXPECT_FALSE(find_conv_algorithm("winograd")->supports(c));
}

// The int8 winograd's two thread splits -- bands of tiles from kSpatialSplitPixels output
// pixels up (13x11), blocks of tiles split over channels below (9x7) -- with several tile
// blocks, edge tiles of one row and one column, partial channel blocks (21 in, 19 out),
// every int8 variant, relu and a residual.
TEST(QConvNchwcWinograd, BandsAndBlocksOfTilesEqualTheOracle) {
  if (!isa_supported(Isa::kAvx2)) GTEST_SKIP() << "avx2 not supported here";
  const ConvAlgorithm& algo = *find_conv_algorithm("winograd");
  uint32_t seed = 5;
  int tested = 0;
  for (const auto& [h, w] : {std::pair<int64_t, int64_t>{9, 7}, {13, 11}})
    for (const QVariant& v : qconv_variants())
      for (bool res : {false, true}) {
        ConvTester t;
        t.channels(21, 19).input(h, w).kernel(3, 3).pad(1).bias(true).residual(res);
        t.activation(Activation::kRelu).int8(v).seed(seed++).threads(2);
        t.layouts(Layout::kNchw8c, Layout::kNchw8c);
        if (!algo.supports(t.problem())) continue;
        const std::vector<Knobs> more = {{{"tile_block", 8}, {"nv", 2}, {"pw", 3}},
                                         {{"tile_block", 16}, {"nv", 1}, {"pw", 5}}};
        EXPECT_TRUE(t.test_points(algo, Isa::kAvx2, more)) << h << "x" << w;
        ++tested;
      }
  EXPECT_GT(tested, 0);
}

INSTANTIATE_TEST_SUITE_P(Isa, QConvNchwc, ::testing::ValuesIn(kAllIsas),
                         [](const auto& info) { return isa_test_name(info.param); });

// What the blocked int8 algorithms take: direct needs u8 input and one group; gemm and
// spatial-pack have no blocked int8 implementation (a plan keeps their layers NCHW).
TEST(QConvNchwcSupport, BlockedInt8ProblemsGoToDirectAndDepthwiseOnly) {
  ConvProblem c;
  c.c = c.k = 32, c.h = c.w = 8, c.kh = c.kw = 3, c.pad_t = c.pad_l = c.pad_b = c.pad_r = 1;
  c.set_int8({0.1f, 3, DType::kU8}, {0.2f, 0, DType::kU8});
  c.set_layouts(Layout::kNchw16c, Layout::kNchw16c);
  EXPECT_TRUE(find_conv_algorithm("direct")->supports(c));
  EXPECT_FALSE(find_conv_algorithm("gemm")->supports(c));
  EXPECT_FALSE(find_conv_algorithm("spatial-pack")->supports(c));
  EXPECT_FALSE(find_conv_algorithm("winograd")->supports(c));
  EXPECT_EQ(auto_conv_algorithm(c, Isa::kAvx512Vnni).name(), "direct");
  // Winograd on the AVX2 path's 8-channel blocks: 3x3, stride 1, u8 input.
  ConvProblem w8 = c;
  w8.set_layouts(Layout::kNchw8c, Layout::kNchw8c);
  EXPECT_TRUE(find_conv_algorithm("winograd")->supports(w8));
  w8.stride_h = w8.stride_w = 2;
  EXPECT_FALSE(find_conv_algorithm("winograd")->supports(w8));
  ConvProblem s8 = c;
  s8.set_int8({0.1f, 0, DType::kS8}, {0.2f, 0, DType::kU8});
  EXPECT_FALSE(find_conv_algorithm("direct")->supports(s8));
  ConvProblem dw = c;
  dw.groups = 32;
  EXPECT_TRUE(find_conv_algorithm("depthwise")->supports(dw));
  EXPECT_EQ(auto_conv_algorithm(dw, Isa::kAvx512Vnni).name(), "depthwise");
}

}  // namespace
}  // namespace dlas::test

namespace dlas::test {
namespace {

// 8-bit reorders (16 x 16 byte transposes for whole runs of 16 pixels, byte by byte for the
// rest) against layout_offset: channel counts with and without a partial block, planes with
// and without a pixel tail, two images; padding lanes come back 0 and the round trip is exact.
TEST(QConvNchwcReorder, EightBitReordersFollowTheLayoutDefinition) {
  ThreadPool pool(2);
  for (int64_t c : {3, 16, 21, 48})
    for (int64_t hw : {1, 15, 16, 49, 64}) {
      const int64_t n = 2;
      for (Layout l : {Layout::kNchw16c, Layout::kNchw8c}) {
        std::vector<uint8_t> src(static_cast<size_t>(n * c * hw));
        for (size_t i = 0; i < src.size(); ++i) src[i] = static_cast<uint8_t>(i * 37 + 11);
        std::vector<uint8_t> blk(static_cast<size_t>(layout_numel(n, c, hw, l)), 0xAA);
        reorder(src.data(), Layout::kNchw, blk.data(), l, n, c, hw, pool);
        const int64_t cp = blocked_channels(c, l);
        for (int64_t img = 0; img < n; ++img)
          for (int64_t ch = 0; ch < cp; ++ch)
            for (int64_t p = 0; p < hw; ++p) {
              const uint8_t want = ch < c ? src[static_cast<size_t>((img * c + ch) * hw + p)] : 0;
              ASSERT_EQ(blk[static_cast<size_t>(layout_offset(l, cp, hw, img, ch, p))], want)
                  << layout_name(l) << " c=" << c << " hw=" << hw << " ch=" << ch << " p=" << p;
            }
        std::vector<uint8_t> back(src.size(), 0xAA);
        reorder(blk.data(), l, back.data(), Layout::kNchw, n, c, hw, pool);
        ASSERT_EQ(back, src) << layout_name(l) << " c=" << c << " hw=" << hw;
      }
    }
}

}  // namespace
}  // namespace dlas::test

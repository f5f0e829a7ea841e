// winograd on blocked layouts (nchw8c on AVX2, nchw16c on AVX-512) against the reference Conv,
// through the ConvTester's layouts (input reordered in, output reordered back; the padding
// lanes of the input hold a finite non-zero value, so a kernel that lets them reach a real
// output lane fails).  build/dlas_tests --gtest_filter='WinogradNchwc*'
#include <gtest/gtest.h>

#include "algo/conv_tester.h"
#include "dlas/core/error.h"

namespace dlas {
const ConvAlgorithm& winograd_nchwc_conv_algorithm();
}

namespace dlas::test {
namespace {

const ConvAlgorithm& algo() { return winograd_nchwc_conv_algorithm(); }

// The blocked layouts this CPU runs, each with the ISA path that runs it.
std::vector<std::pair<Layout, Isa>> layouts() {
  std::vector<std::pair<Layout, Isa>> out;
  if (isa_supported(Isa::kAvx2)) out.push_back({Layout::kNchw8c, Isa::kAvx2});
  if (isa_supported(Isa::kAvx512)) out.push_back({Layout::kNchw16c, Isa::kAvx512});
  return out;
}

// The generated 3x3 stride-1 problems plus channel counts off the block (C 5, K 9 and
// 20), bottom/right padding only, a 1x1 output, a long reduction, a 14x14 plane (F(4,3)'s
// tiles past the edge) and one with more tiles than a block.
std::vector<ConvProblem> problems() {
  std::vector<ConvProblem> out;
  for (ConvProblem p : generated_conv_problems()) {
    p.set_layouts(Layout::kNchw16c, Layout::kNchw16c);
    if (algo().supports(p)) out.push_back(p);
  }
  ConvProblem q = out.front();
  q.c = 5, q.k = 9, q.h = 7, q.w = 10, q.pad_t = 0, q.pad_l = 0, q.pad_b = 2, q.pad_r = 1;
  out.push_back(q);
  q.h = 3, q.w = 3, q.pad_b = q.pad_r = 0;
  out.push_back(q);
  q.c = 256, q.k = 20, q.h = 12, q.w = 12, q.pad_t = q.pad_l = q.pad_b = q.pad_r = 1;
  out.push_back(q);
  out.push_back(ConvProblem::from_key("c48_h14_w14_k32_3x3_s1x1_p1x1x1x1_d1x1_g1"));
  out.push_back(ConvProblem::from_key("c16_h40_w36_k24_3x3_s1x1_p1x1x1x1_d1x1_g1"));
  return out;
}

TEST(WinogradNchwcConv, SupportsBlocked3x3Stride1Ungrouped) {
  int supported = 0;
  for (ConvProblem p : generated_conv_problems()) {
    EXPECT_FALSE(algo().supports(p)) << "NCHW " << p.key();
    const bool want = p.kh == 3 && p.kw == 3 && p.stride_h == 1 && p.stride_w == 1 &&
                      p.dil_h == 1 && p.groups == 1;
    p.set_layouts(Layout::kNchw16c, Layout::kNchw16c);
    EXPECT_EQ(algo().supports(p), want) << p.key();
    supported += want;
    p.set_layouts(Layout::kNchw, Layout::kNchw16c);  // an NCHW input: never
    EXPECT_FALSE(algo().supports(p)) << p.key();
  }
  EXPECT_GE(supported, 6);
  // The list row sends blocked problems here.
  EXPECT_TRUE(conv_algorithm_has_blocked("winograd"));
}

TEST(WinogradNchwcConv, RejectsAPathWithoutTheBlocksVectors) {
  ConvProblem p = problems().front();
  p.set_layouts(Layout::kNchw16c, Layout::kNchw16c);
  std::vector<float> w(static_cast<size_t>(p.weight_count()));
  EXPECT_THROW(algo().prepare(p, ConvWeights::f32(w.data()), algo().default_knobs(p, Isa::kAvx2),
                              Isa::kAvx2),
               Error);
}

TEST(WinogradNchwcConv, DefaultKnobsOneAndTwoThreads) {
  if (layouts().empty()) GTEST_SKIP() << "no AVX2";
  for (const auto& [l, isa] : layouts())
    for (ConvProblem p : problems()) {
      p.set_layouts(l, l);
      ConvTester t;
      t.problem(p);
      EXPECT_TRUE(t.test(algo(), isa)) << p.key();
      EXPECT_TRUE(t.threads(2).test(algo(), isa)) << p.key();
    }
}

// Both variants, tile blocks that split the image (and leave a short last block), every nv
// and a register tile narrower than the block's tiles.
TEST(WinogradNchwcConv, KnobPoints) {
  if (layouts().empty()) GTEST_SKIP() << "no AVX2";
  for (const auto& [l, isa] : layouts()) {
    ConvProblem p = ConvProblem::from_key("c40_h13_w15_k72_3x3_s1x1_p1x1x1x1_d1x1_g1");
    p.set_layouts(l, l);
    for (int64_t m : {2, 4})
      for (int64_t tb : {8, 16})
        for (int64_t nv : {1, 2, 3, 4})
          for (int64_t pw : {3, 7}) {
            const Knobs k{{"variant", m}, {"tile_block", tb}, {"nv", nv}, {"pw", pw}};
            if (!ConvTester().problem(p).threads(2).test(algo(), isa, k)) return;
          }
  }
}

// A plane large enough for the spatial split (split_spatially): each thread's band of tiles
// through several transform blocks, bands of unequal length (3 threads), a residual.
TEST(WinogradNchwcConv, SpatialBandsOverSeveralBlocks) {
  if (layouts().empty()) GTEST_SKIP() << "no AVX2";
  for (const auto& [l, isa] : layouts()) {
    ConvProblem p = ConvProblem::from_key("c16_h40_w36_k24_3x3_s1x1_p1x1x1x1_d1x1_g1");
    p.set_layouts(l, l);
    for (int64_t m : {2, 4})
      for (int64_t tb : {8, 32})
        for (int threads : {2, 3}) {
          const Knobs k{{"variant", m}, {"tile_block", tb}, {"nv", 2}, {"pw", 5}};
          EXPECT_TRUE(ConvTester().problem(p).threads(threads).test(algo(), isa, k))
              << m << " " << tb << " " << threads;
          EXPECT_TRUE(ConvTester().problem(p).residual(true).threads(threads).test(algo(), isa, k));
        }
  }
}

TEST(WinogradNchwcConv, Epilogues) {
  if (layouts().empty()) GTEST_SKIP() << "no AVX2";
  for (const auto& [l, isa] : layouts()) {
    ConvProblem base = ConvProblem::from_key("c16_h9_w11_k24_3x3_s1x1_p1x1x1x1_d1x1_g1");
    base.set_layouts(l, l);
    for (int64_t m : {2, 4}) {
      Knobs k = algo().default_knobs(base, isa);
      k["variant"] = m;
      for (bool res : {false, true}) {
        ConvTester t;
        t.problem(base).residual(res);
        t.activation(Activation::kNone).test(algo(), isa, k);
        t.activation(Activation::kRelu).test(algo(), isa, k);
        t.activation(Activation::kClip, -0.5f, 0.5f).test(algo(), isa, k);
        t.activation(Activation::kSilu).test(algo(), isa, k);
        t.activation(Activation::kHardSigmoid, 0.2f, 0.5f).threads(2).test(algo(), isa, k);
      }
      ConvProblem nb = base;
      nb.has_bias = false;
      ConvTester().problem(nb).test(algo(), isa, k);
    }
  }
}

}  // namespace
}  // namespace dlas::test

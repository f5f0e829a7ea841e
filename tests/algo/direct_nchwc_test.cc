// direct on blocked layouts (nchw8c / nchw16c) and its tile kernels against the reference
// Conv, through the ConvTester's layouts (input reordered in, output reordered back).
#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "algo/conv/direct_nchwc_f32.h"
#include "algo/conv_tester.h"
#include "dlas/core/error.h"

namespace dlas::test {
namespace {

const ConvAlgorithm& algo() { return direct_nchwc_conv_algorithm(); }

// Every kernel set this CPU runs, production and test-only, with the ISA path it runs on.
std::vector<std::pair<const ukernel::F32NchwcUkernels*, Isa>> kernel_sets() {
  std::vector<std::pair<const ukernel::F32NchwcUkernels*, Isa>> out;
  for (const auto* list :
       {&ukernel::f32_nchwc_ukernels(), &ukernel::f32_nchwc_test_only_ukernels()})
    for (const ukernel::F32NchwcUkernels& u : *list)
      if (isa_supported(u.isa)) out.push_back({&u, u.isa});
  return out;
}

Layout layout_of(const ukernel::F32NchwcUkernels& u) {
  return u.lanes == 16 ? Layout::kNchw16c : Layout::kNchw8c;
}

// The generated problems plus small outputs (4x4, 2x2, 1x1), a 7x7 stem on NCHW input and
// two with many tiles.
std::vector<ConvProblem> problems() {
  std::vector<ConvProblem> out = generated_conv_problems();
  ConvProblem p = out[16];  // 64 -> 64, 4x4
  p.h = p.w = 2, p.c = 40, p.k = 72;
  out.push_back(p);
  p.h = p.w = 1;
  out.push_back(p);
  p.h = p.w = 4, p.stride_h = p.stride_w = 2, p.c = 24, p.k = 13;  // 4x4 -> 2x2, stride 2
  out.push_back(p);
  // Enough tiles that the run gives each work item a run of them, the last one short: a
  // flat 1x1 (900 pixels) and a padded 3x3 on 23x23.
  out.push_back(ConvProblem::from_key("c16_h30_w30_k24_1x1_s1x1_p0x0x0x0_d1x1_g1"));
  out.push_back(ConvProblem::from_key("c8_h23_w23_k40_3x3_s1x1_p1x1x1x1_d1x1_g1"));
  // 1x1 convs whose input ends half way into a block of 16 (the kernels skip its padding
  // lanes), flat and strided.
  out.push_back(ConvProblem::from_key("c24_h9_w9_k40_1x1_s1x1_p0x0x0x0_d1x1_g1"));
  out.push_back(ConvProblem::from_key("c40_h9_w9_k24_1x1_s2x2_p0x0x0x0_d1x1_g1"));
  return out;
}

bool run_set(const ConvProblem& p, const ukernel::F32NchwcUkernels& u, Isa isa, Knobs knobs,
             int threads = 1) {
  const ConvTester t = ConvTester().problem(p).threads(threads);
  if (knobs.empty()) knobs = algo().default_knobs(p, isa);
  return t.test_with(
      [&](const ConvProblem& q, const ConvWeights& w) {
        return prepare_direct_nchwc(q, w, knobs, isa, u);
      },
      std::string(u.name) + " " + p.key(), knobs);
}

// Whether every conv group holds whole blocks of `b` channels, in and out.
bool whole_blocks_per_group(const ConvProblem& p, int64_t b) {
  return p.groups == 1 || ((p.c / p.groups) % b == 0 && (p.k / p.groups) % b == 0);
}
// Whether every block of `b` channels holds whole groups of 4 or more channels, as many
// in as out.
bool whole_groups_per_block(const ConvProblem& p, int64_t b) {
  const int64_t cpg = p.c / p.groups;
  return p.groups > 1 && p.c == p.k && cpg >= 4 && cpg < b && b % cpg == 0;
}

TEST(DirectNchwcConv, SupportsBlockedProblemsWithWholeBlocksPerGroup) {
  for (ConvProblem p : generated_conv_problems()) {
    EXPECT_FALSE(algo().supports(p)) << "NCHW " << p.key();
    p.set_layouts(Layout::kNchw16c, Layout::kNchw16c);
    EXPECT_EQ(algo().supports(p), whole_blocks_per_group(p, 16) || whole_groups_per_block(p, 16))
        << p.key();
    p.set_layouts(Layout::kNchw, Layout::kNchw8c);
    EXPECT_EQ(algo().supports(p), p.groups == 1) << p.key();
  }
  // Grouped: whole blocks per group on a blocked input only; depthwise never.
  ConvProblem g = ConvProblem::from_key("c32_h9_w9_k64_3x3_s1x1_p1x1x1x1_d1x1_g2");
  EXPECT_TRUE(algo().supports(g.set_layouts(Layout::kNchw8c, Layout::kNchw8c)));
  EXPECT_TRUE(algo().supports(g.set_layouts(Layout::kNchw16c, Layout::kNchw16c)));
  EXPECT_FALSE(algo().supports(g.set_layouts(Layout::kNchw, Layout::kNchw8c)));
  g = ConvProblem::from_key("c32_h9_w9_k32_3x3_s1x1_p1x1x1x1_d1x1_g4");  // 8 per group
  EXPECT_TRUE(algo().supports(g.set_layouts(Layout::kNchw8c, Layout::kNchw8c)));
  EXPECT_TRUE(algo().supports(g.set_layouts(Layout::kNchw16c, Layout::kNchw16c)));  // 2 a block
  g = ConvProblem::from_key("c32_h9_w9_k64_3x3_s1x1_p1x1x1x1_d1x1_g4");             // 8 in, 16 out
  EXPECT_FALSE(algo().supports(g.set_layouts(Layout::kNchw16c, Layout::kNchw16c)));
  g = ConvProblem::from_key("c32_h9_w9_k32_3x3_s1x1_p1x1x1x1_d1x1_g16");  // 2 per group
  EXPECT_FALSE(algo().supports(g.set_layouts(Layout::kNchw16c, Layout::kNchw16c)));
  g = ConvProblem::from_key("c16_h9_w9_k16_3x3_s1x1_p1x1x1x1_d1x1_g16");
  EXPECT_FALSE(algo().supports(g.set_layouts(Layout::kNchw8c, Layout::kNchw8c)));
  // The list row sends blocked problems to this implementation and NCHW ones elsewhere.
  const ConvAlgorithm* direct = find_conv_algorithm("direct");
  ASSERT_NE(direct, nullptr);
  ConvProblem p = generated_conv_problems()[2];
  EXPECT_TRUE(direct->supports(p.set_layouts(Layout::kNchw16c, Layout::kNchw16c)));
  EXPECT_FALSE(find_conv_algorithm("gemm")->supports(p));
  EXPECT_TRUE(conv_algorithm_has_blocked("direct"));
  EXPECT_FALSE(conv_algorithm_has_blocked("sparse-direct"));
}

TEST(DirectNchwcConv, RejectsMismatchedBlocksAndIsa) {
  ConvProblem p = generated_conv_problems()[2];
  p.set_layouts(Layout::kNchw8c, Layout::kNchw16c);
  EXPECT_THROW(p.validate(), Error);
  p.set_layouts(Layout::kNchw16c, Layout::kNchw16c);
  std::vector<float> w(static_cast<size_t>(p.weight_count()));
  EXPECT_THROW(algo().prepare(p, ConvWeights::f32(w.data()), algo().default_knobs(p, Isa::kScalar),
                              Isa::kScalar),
               Error);
  EXPECT_THROW(algo().prepare(p, ConvWeights::f32(w.data()), algo().default_knobs(p, Isa::kAvx2),
                              Isa::kAvx2),
               Error);
}

// A machine profile's class knobs on a layer whose output blocks nv does not divide: the
// last block group's tile would hold fewer than 8 accumulators, so the blocks per tile
// become a divisor of the layer's blocks (pw kept, or raised where the blocks drop).
TEST(DirectNchwcConv, ClassKnobsFitRaggedBlockGroups) {
  auto fit = [](const char* key, Layout l, Isa isa, Knobs k) {
    ConvProblem p = ConvProblem::from_key(key);
    p.set_layouts(l, l);
    Knobs f = algo().fit_class_knobs(p, isa, k);
    algo().knob_space(p, isa).validate(f, "fitted");
    return f;
  };
  const char* k24 = "c144_h32_w32_k24_1x1_s1x1_p0x0x0x0_d1x1_g1";
  // 24 channels on 8 lanes: 3 blocks, groups of 2 and 1 at nv = 2 (4 accumulators).
  Knobs f = fit(k24, Layout::kNchw8c, Isa::kAvx2, {{"nv", 2}, {"pw", 4}});
  EXPECT_EQ(f.at("nv"), 3);
  EXPECT_EQ(f.at("pw"), 4);
  // The last group's tile already holds 8 accumulators: as given.
  f = fit(k24, Layout::kNchw8c, Isa::kAvx2, {{"nv", 2}, {"pw", 8}});
  EXPECT_EQ(f.at("nv"), 2);
  // Whole groups: as given.
  f = fit("c144_h32_w32_k32_1x1_s1x1_p0x0x0x0_d1x1_g1", Layout::kNchw8c, Isa::kAvx2,
          {{"nv", 2}, {"pw", 4}});
  EXPECT_EQ(f.at("nv"), 2);
  EXPECT_EQ(f.at("pw"), 4);
  // 144 channels on 16 lanes: 9 blocks, groups of 4, 4 and 1 at nv = 4 (6 accumulators):
  // 3 blocks, the pixels raised to keep 24 accumulators.
  f = fit("c24_h8_w8_k144_1x1_s1x1_p0x0x0x0_d1x1_g1", Layout::kNchw16c, Isa::kAvx512,
          {{"nv", 4}, {"pw", 6}});
  EXPECT_EQ(f.at("nv"), 3);
  EXPECT_EQ(f.at("pw"), 8);
  // Whole-row tiles are left alone.
  f = fit("c64_h4_w4_k144_3x3_s1x1_p1x1x1x1_d1x1_g1", Layout::kNchw16c, Isa::kAvx512,
          {{"nv", 4}, {"pw", 2}, {"ph", 2}});
  EXPECT_EQ(f.at("nv"), 4);
  // The fitted tile computes the conv.
  for (const auto& [u, isa] : kernel_sets()) {
    if (u->lanes != 8) continue;
    ConvProblem p = ConvProblem::from_key(k24);
    p.set_layouts(Layout::kNchw8c, Layout::kNchw8c);
    run_set(p, *u, isa, algo().fit_class_knobs(p, isa, {{"nv", 2}, {"pw", 4}}), 2);
  }
}

// A class's pw on a row of another length: as many tiles as before, all equally wide (the
// narrowest knob value that keeps their count), so no ragged last tile of a pixel or two.
TEST(DirectNchwcConv, ClassKnobsSpreadPixelsEvenly) {
  auto fit = [](const char* key, Knobs k) {
    ConvProblem p = ConvProblem::from_key(key);
    p.set_layouts(Layout::kNchw16c, Layout::kNchw16c);
    Knobs f = algo().fit_class_knobs(p, Isa::kAvx512, k);
    algo().knob_space(p, Isa::kAvx512).validate(f, "fitted");
    return f;
  };
  const char* k7 = "c160_h7_w7_k960_1x1_s1x1_p0x0x0x0_d1x1_g1";  // one row of 49 pixels
  EXPECT_EQ(fit(k7, {{"nv", 2}, {"pw", 8}}).at("pw"), 7);        // 6 x 8 + 1 -> 7 x 7
  EXPECT_EQ(fit(k7, {{"nv", 2}, {"pw", 10}}).at("pw"), 10);      // 4 x 10 + 9: as given
  EXPECT_EQ(fit(k7, {{"nv", 3}, {"pw", 6}}).at("pw"), 6);        // nine tiles at any width 6
  // A pw past nv's registers counts as the tile the kernel runs (nv = 3: 8 pixels).
  EXPECT_EQ(fit(k7, {{"nv", 3}, {"pw", 24}}).at("pw"), 7);
  // 32-pixel rows of a 3x3 conv: 10, 10, 10, 2 -> four tiles of 8.
  EXPECT_EQ(fit("c16_h32_w32_k32_3x3_s1x1_p1x1x1x1_d1x1_g1", {{"nv", 2}, {"pw", 10}}).at("pw"), 8);
  // Rows no wider than pw, and whole-row tiles, are left alone.
  EXPECT_EQ(fit("c512_h2_w2_k512_1x1_s1x1_p0x0x0x0_d1x1_g1", {{"nv", 2}, {"pw", 8}}).at("pw"), 8);
  Knobs rows = fit("c64_h7_w7_k64_3x3_s1x1_p1x1x1x1_d1x1_g1", {{"nv", 1}, {"pw", 3}, {"ph", 2}});
  EXPECT_EQ(rows.at("pw"), 3);
  EXPECT_EQ(rows.at("ph"), 2);
  // The spread tile computes the conv (on the sets the engine runs: fitting reads them).
  for (const auto& [u, isa] : kernel_sets()) {
    if (ukernel::f32_nchwc_for(isa, u->lanes) != u) continue;
    ConvProblem p = ConvProblem::from_key("c32_h7_w7_k48_1x1_s1x1_p0x0x0x0_d1x1_g1");
    const Layout l = u->lanes == 16 ? Layout::kNchw16c : Layout::kNchw8c;
    p.set_layouts(l, l);
    const Knobs f = algo().fit_class_knobs(p, isa, {{"nv", 2}, {"pw", 8}});
    EXPECT_EQ(f.at("pw"), u->lanes == 16 ? 7 : 6) << u->name;  // 8 lanes: 6 pixels fit nv = 2
    run_set(p, *u, isa, f, 2);
  }
}

// The calibration's survey measures each register-tile family of a one-row conv: the
// default first, then per block count the widest tile its registers hold, pixels spread
// evenly; every point in the space, none twice. Planes of whole-row tiles keep the
// generic spread over the space.
TEST(DirectNchwcConv, SurveyMeasuresEveryTileFamily) {
  ConvProblem p = ConvProblem::from_key("c512_h4_w4_k512_1x1_s1x1_p0x0x0x0_d1x1_g1");
  p.set_layouts(Layout::kNchw16c, Layout::kNchw16c);
  const std::vector<Knobs> points = algo().survey_knobs(p, Isa::kAvx512, 3);
  ASSERT_EQ(points.size(), 4u);
  EXPECT_EQ(points.front(), algo().default_knobs(p, Isa::kAvx512));
  std::set<int64_t> blocks;
  for (size_t i = 0; i < points.size(); ++i) {
    algo().knob_space(p, Isa::kAvx512).validate(points[i], "survey");
    blocks.insert(points[i].at("nv"));
    for (size_t j = 0; j < i; ++j) EXPECT_NE(points[i], points[j]);
  }
  EXPECT_EQ(blocks, (std::set<int64_t>{1, 2, 3, 4}));
  // 16 pixels in two tiles of 8 at nv = 2 (12 pixels fit its registers).
  EXPECT_NE(std::find(points.begin(), points.end(), Knobs{{"nv", 2}, {"pw", 8}}), points.end());
  // At most `extra` points besides the default.
  EXPECT_EQ(algo().survey_knobs(p, Isa::kAvx512, 1).size(), 2u);
  ConvProblem rows = ConvProblem::from_key("c512_h4_w4_k512_3x3_s1x1_p1x1x1x1_d1x1_g1");
  rows.set_layouts(Layout::kNchw16c, Layout::kNchw16c);
  EXPECT_EQ(algo().survey_knobs(rows, Isa::kAvx512, 3),
            algo().ConvAlgorithm::survey_knobs(rows, Isa::kAvx512, 3));
}

TEST(DirectNchwcConv, DefaultKnobsEveryKernelSetBothInputLayouts) {
  int tested = 0;
  for (const auto& [u, isa] : kernel_sets())
    for (ConvProblem p : problems()) {
      if (p.groups != 1) continue;
      for (Layout x : {layout_of(*u), Layout::kNchw}) {
        p.set_layouts(x, layout_of(*u));
        if (!algo().supports(p)) continue;
        run_set(p, *u, isa, {});
        run_set(p, *u, isa, {}, 2);
        ++tested;
      }
    }
  if (kernel_sets().empty()) GTEST_SKIP() << "no AVX2";
  EXPECT_GT(tested, 0);
}

TEST(DirectNchwcConv, EveryTileShape) {
  for (const auto& [u, isa] : kernel_sets()) {
    // Stride 2 with padding (stride-resolved broadcasts), 1x1 flat, odd K tail.
    for (int idx : {3, 5, 15}) {
      ConvProblem p = generated_conv_problems()[idx];
      p.set_layouts(layout_of(*u), layout_of(*u));
      const KnobSpace space = algo().knob_space(p, isa);
      for (int64_t i = 0; i < space.size(); ++i)
        if (!run_set(p, *u, isa, space.point(i), 2)) break;
    }
  }
}

// Grouped convs (regnet's and resnext's 3x3s): each block group reduces over its conv
// group's input blocks only. Group widths of one and several blocks, 3x3 padded at
// stride 1 and 2, a flat 1x1 and a residual epilogue; every nv the knob space offers.
TEST(DirectNchwcConv, GroupedWholeBlocksPerGroup) {
  int tested = 0;
  for (const auto& [u, isa] : kernel_sets()) {
    const int64_t b = u->lanes;
    for (const char* key :
         {"c32_h9_w9_k32_3x3_s1x1_p1x1x1x1_d1x1_g2", "c64_h7_w7_k96_3x3_s2x2_p1x1x1x1_d1x1_g2",
          "c64_h11_w11_k64_3x3_s1x1_p1x1x1x1_d1x1_g4", "c48_h6_w6_k48_1x1_s1x1_p0x0x0x0_d1x1_g3",
          "c96_h5_w5_k96_3x3_s1x1_p1x1x1x1_d1x1_g6"}) {
      ConvProblem p = ConvProblem::from_key(key);
      p.set_layouts(layout_of(*u), layout_of(*u));
      if (!whole_blocks_per_group(p, b)) continue;
      ASSERT_TRUE(algo().supports(p)) << key;
      const KnobSpace space = algo().knob_space(p, isa);
      for (int64_t i = 0; i < space.size(); i += 3) run_set(p, *u, isa, space.point(i), 2);
      run_set(p, *u, isa, {});
      p.epilogue.residual = true;
      p.epilogue.act = Activation::kRelu;
      run_set(p, *u, isa, {}, 2);
      ++tested;
    }
  }
  if (kernel_sets().empty()) GTEST_SKIP() << "no AVX2";
  EXPECT_GT(tested, 0);
}

// Groups narrower than a block (regnet_y's 8 channels a group, resnext's 4 and 8): each
// block reduced as one group, zero weights between its groups. Channels that end inside a
// block, 3x3 padded at stride 1 and 2 (one-row and whole-row tiles), a flat 1x1, a
// residual with a non-fused activation, 1 and 2 threads.
TEST(DirectNchwcConv, GroupedSeveralGroupsPerBlock) {
  int tested = 0;
  for (const auto& [u, isa] : kernel_sets()) {
    const int64_t b = u->lanes;
    for (const char* key :
         {"c32_h9_w9_k32_3x3_s1x1_p1x1x1x1_d1x1_g4", "c32_h9_w10_k32_3x3_s2x2_p1x1x1x1_d1x1_g8",
          "c24_h7_w7_k24_3x3_s1x1_p1x1x1x1_d1x1_g3", "c48_h14_w14_k48_3x3_s1x1_p1x1x1x1_d1x1_g12",
          "c40_h4_w4_k40_3x3_s1x1_p1x1x1x1_d1x1_g10", "c64_h6_w6_k64_1x1_s1x1_p0x0x0x0_d1x1_g8"}) {
      ConvProblem p = ConvProblem::from_key(key);
      p.set_layouts(layout_of(*u), layout_of(*u));
      if (!whole_groups_per_block(p, b)) continue;
      ASSERT_TRUE(algo().supports(p)) << key;
      const KnobSpace space = algo().knob_space(p, isa);
      for (int64_t i = 0; i < space.size(); i += 5) run_set(p, *u, isa, space.point(i), 2);
      run_set(p, *u, isa, {});
      p.epilogue.residual = true;
      p.epilogue.act = Activation::kSilu;
      run_set(p, *u, isa, {}, 2);
      ++tested;
    }
  }
  if (kernel_sets().empty()) GTEST_SKIP() << "no AVX2";
  EXPECT_GT(tested, 0);
}

// Tiles of whole rows (ph > 1) on planes of at most 8 columns: every row count and block
// count the knob space offers (those without a row kernel run one-row tiles), rows that do not
// divide the plane (7 = 3 + 3 + 1), stride 2, a 5x5 kernel, and a residual with a non-fused
// activation over the stored rows.
TEST(DirectNchwcConv, WholeRowTiles) {
  int tested = 0;
  for (const auto& [u, isa] : kernel_sets()) {
    for (const char* key :
         {"c40_h4_w4_k72_3x3_s1x1_p1x1x1x1_d1x1_g1", "c24_h7_w7_k40_3x3_s1x1_p1x1x1x1_d1x1_g1",
          "c32_h14_w14_k48_3x3_s2x2_p1x1x1x1_d1x1_g1", "c16_h2_w2_k64_3x3_s1x1_p1x1x1x1_d1x1_g1",
          "c16_h8_w8_k24_5x5_s1x1_p2x2x2x2_d1x1_g1", "c32_h5_w3_k32_1x1_s2x2_p0x0x0x0_d1x1_g1"}) {
      ConvProblem p = ConvProblem::from_key(key);
      p.set_layouts(layout_of(*u), layout_of(*u));
      ASSERT_TRUE(algo().supports(p)) << key;
      const KnobSpace space = algo().knob_space(p, isa);
      ASSERT_TRUE(space.knobs.size() == 3 && space.knobs[2].name == "ph") << key;
      for (int64_t nv : space.knobs[0].values)
        for (int64_t ph : space.knobs[2].values)
          run_set(p, *u, isa, {{"nv", nv}, {"pw", 2}, {"ph", ph}}, 2);
      p.epilogue.residual = true;
      p.epilogue.act = Activation::kSilu;
      for (int64_t nv : {1, 2})
        for (int64_t ph : {2, 3, 4}) run_set(p, *u, isa, {{"nv", nv}, {"pw", 2}, {"ph", ph}}, 2);
      ++tested;
    }
    // The knob is offered only where whole rows fit the kernels: not on wide planes, not on
    // an NCHW input, not on a flat 1x1.
    ConvProblem wide = ConvProblem::from_key("c16_h9_w9_k16_3x3_s1x1_p1x1x1x1_d1x1_g1");
    wide.set_layouts(layout_of(*u), layout_of(*u));
    EXPECT_EQ(algo().knob_space(wide, isa).knobs.size(), 2u);
    ConvProblem flat = ConvProblem::from_key("c16_h4_w4_k16_1x1_s1x1_p0x0x0x0_d1x1_g1");
    flat.set_layouts(layout_of(*u), layout_of(*u));
    EXPECT_EQ(algo().knob_space(flat, isa).knobs.size(), 2u);
    ConvProblem odd = ConvProblem::from_key("c16_h6_w6_k16_3x3_s1x1_p1x1x1x1_d1x1_g1");
    odd.set_layouts(layout_of(*u), layout_of(*u));  // 6 columns: no row kernels
    EXPECT_EQ(algo().knob_space(odd, isa).knobs.size(), 2u);
    ConvProblem stem = ConvProblem::from_key("c3_h8_w8_k16_3x3_s1x1_p1x1x1x1_d1x1_g1");
    stem.set_layouts(Layout::kNchw, layout_of(*u));
    EXPECT_EQ(algo().knob_space(stem, isa).knobs.size(), 2u);
  }
  if (kernel_sets().empty()) GTEST_SKIP() << "no AVX2";
  EXPECT_GT(tested, 0);
}

TEST(DirectNchwcConv, Epilogues) {
  for (const auto& [u, isa] : kernel_sets()) {
    ConvProblem base = generated_conv_problems()[2];  // 17 -> 23, 8x8
    base.set_layouts(layout_of(*u), layout_of(*u));
    for (bool res : {false, true})
      for (Activation a :
           {Activation::kNone, Activation::kRelu, Activation::kClip, Activation::kSilu,
            Activation::kHardSwish, Activation::kSigmoid, Activation::kHardSigmoid}) {
        ConvProblem p = base;
        p.epilogue.residual = res;
        p.epilogue.act = a;
        p.epilogue.p0 = a == Activation::kHardSigmoid ? 0.2f : 0.f;
        p.epilogue.p1 = a == Activation::kHardSigmoid ? 0.5f : 6.f;
        run_set(p, *u, isa, {}, 2);
      }
  }
}

}  // namespace
}  // namespace dlas::test

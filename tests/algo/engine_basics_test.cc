// ISA paths, knob spaces, the conv problem key and the thread pool.
#include <gtest/gtest.h>

#include <atomic>
#include <vector>

#include "dlas/algo/conv.h"
#include "dlas/algo/knobs.h"
#include "dlas/core/error.h"
#include "dlas/hw/isa.h"
#include "dlas/hw/thread_pool.h"

namespace dlas {
namespace {

TEST(Isa, NamesRoundTripAndUnknownIsUsageError) {
  for (Isa isa : kAllIsas) EXPECT_EQ(parse_isa(isa_name(isa)), isa);
  try {
    parse_isa("neon");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kUsage);
  }
}

TEST(Isa, SupportedPathsAreOrderedAndIncludeScalar) {
  const auto s = supported_isas();
  ASSERT_FALSE(s.empty());
  EXPECT_EQ(s.front(), Isa::kScalar);
  EXPECT_EQ(s.back(), base_isa(detected_isa()));
  for (Isa isa : s) EXPECT_EQ(base_isa(isa), isa);
  const auto levels = supported_isa_levels();
  EXPECT_EQ(levels.back(), detected_isa());
  for (Isa isa : levels) EXPECT_TRUE(isa_supported(base_isa(isa)));
  for (Isa isa : kAllIsas) {
    if (!isa_supported(isa)) {
      EXPECT_THROW(set_active_isa(isa), Error);
    }
  }
}

TEST(Knobs, ValidateNamesTheKnobAndJsonRoundTrips) {
  KnobSpace space{{{"mb", {4, 8}, "rows"}, {"nb", {16, 32, 64}, "cols"}}};
  EXPECT_EQ(space.size(), 6);
  space.validate({{"mb", 8}, {"nb", 64}}, "ctx");
  auto expect_msg = [&](const Knobs& k, const std::string& frag) {
    try {
      space.validate(k, "ctx");
      ADD_FAILURE() << frag;
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::kInvalidInput);
      EXPECT_NE(std::string(e.what()).find(frag), std::string::npos) << e.what();
    }
  };
  expect_msg({{"mb", 8}}, "'nb' is missing");
  expect_msg({{"mb", 5}, {"nb", 16}}, "'mb' = 5");
  expect_msg({{"mb", 4}, {"nb", 16}, {"zz", 1}}, "unknown knob 'zz'");
  for (int64_t i = 0; i < space.size(); ++i) {
    const Knobs k = space.point(i);
    space.validate(k, "point");
    EXPECT_EQ(knobs_from_json(knobs_to_json(k)), k);
  }
  EXPECT_THROW(knobs_from_json("{\"a\": 1.5}"), Error);
  EXPECT_THROW(knobs_from_json("[1]"), Error);
}

TEST(Knobs, AlgorithmChoiceWithOverridesParsesLabelsAndNamesBadParts) {
  const AlgoChoiceSpec plain = parse_algo_choice("gemm");
  EXPECT_EQ(plain.algo, "gemm");
  EXPECT_TRUE(plain.knobs.empty());
  const AlgoChoiceSpec s = parse_algo_choice("sparse-direct:format=csr,vecs=4");
  EXPECT_EQ(s.algo, "sparse-direct");
  ASSERT_EQ(s.knobs.size(), 2u);
  const KnobSpace space{
      {{"format", {0, 1, 2}, "fmt", {"auto", "csr", "bsr4x1"}}, {"vecs", {4, 8}, "vectors"}}};
  Knobs k = {{"format", 0}, {"vecs", 8}};
  apply_knob_overrides(s, space, k, "layer");
  EXPECT_EQ(k, (Knobs{{"format", 1}, {"vecs", 4}}));
  apply_knob_overrides(parse_algo_choice("x:format=2"), space, k, "layer");
  EXPECT_EQ(k.at("format"), 2);
  auto expect_msg = [](auto&& fn, const std::string& frag) {
    try {
      fn();
      ADD_FAILURE() << frag;
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::kInvalidInput);
      EXPECT_NE(std::string(e.what()).find(frag), std::string::npos) << e.what();
    }
  };
  expect_msg([] { parse_algo_choice("gemm:"); }, "no knobs");
  expect_msg([] { parse_algo_choice("gemm:mb"); }, "expected knob=value");
  expect_msg([] { parse_algo_choice("gemm:mb=4,"); }, "trailing");
  expect_msg([] { parse_algo_choice(":mb=4"); }, "missing the algorithm");
  expect_msg([&] { apply_knob_overrides(parse_algo_choice("a:zz=1"), space, k, "layer"); },
             "has no knob 'zz'");
  expect_msg([&] { apply_knob_overrides(parse_algo_choice("a:format=bsr9"), space, k, "layer"); },
             "1 (csr)");
  expect_msg([&] { apply_knob_overrides(parse_algo_choice("a:vecs=5"), space, k, "layer"); },
             "'vecs' = '5'");
}

TEST(ConvProblemKey, RoundTripsAndRejectsJunk) {
  ConvProblem p;
  p.n = 2, p.c = 17, p.h = 9, p.w = 11, p.k = 23, p.kh = 3, p.kw = 5, p.stride_h = 2, p.pad_t = 1,
  p.pad_l = 2, p.pad_b = 0, p.pad_r = 2, p.dil_w = 2, p.groups = 1;
  const ConvProblem q = ConvProblem::from_key(p.key());
  EXPECT_EQ(q.key(), p.key());
  EXPECT_EQ(q.macs(), p.macs());
  EXPECT_THROW(ConvProblem::from_key("c3_h32"), Error);
  EXPECT_THROW(ConvProblem::from_key(p.key() + "_x"), Error);
  EXPECT_THROW(ConvProblem::from_key("c3_h32_w32_k8_3x3_s1x1_p1x1x1x1_d1x1_g2"), Error);
}

TEST(ConvAlgorithms, AutoRulePicksASupportingAlgorithm) {
  ASSERT_FALSE(conv_algorithms().empty());
  ConvProblem p;
  p.c = 64, p.k = 64, p.h = p.w = 32, p.kh = p.kw = 3, p.pad_t = p.pad_l = p.pad_b = p.pad_r = 1;
  EXPECT_TRUE(auto_conv_algorithm(p, active_isa()).supports(p));
  p.groups = 64;
  EXPECT_TRUE(auto_conv_algorithm(p, active_isa()).supports(p));
  for (const ConvAlgorithm* a : conv_algorithms()) EXPECT_EQ(find_conv_algorithm(a->name()), a);
  EXPECT_EQ(find_conv_algorithm("nope"), nullptr);
}

// The documented rule, case by case (conv.h, README "The engine").
TEST(ConvAlgorithms, AutoRuleFollowsItsDocumentation) {
  auto conv = [](int64_t c, int64_t k, int64_t hw, int64_t ks, int64_t stride, int64_t groups) {
    ConvProblem p;
    p.c = c, p.k = k, p.h = p.w = hw, p.kh = p.kw = ks, p.stride_h = p.stride_w = stride;
    p.pad_t = p.pad_l = p.pad_b = p.pad_r = ks / 2;
    p.groups = groups;
    return std::string(auto_conv_algorithm(p, active_isa()).name());
  };
  EXPECT_EQ(conv(3, 64, 224, 7, 2, 1), "direct");       // RGB stem
  EXPECT_EQ(conv(1, 32, 28, 3, 1, 1), "direct");        // greyscale stem
  EXPECT_EQ(conv(64, 64, 56, 3, 1, 1), "winograd");     // 3x3 s1, 56x56
  EXPECT_EQ(conv(512, 512, 7, 3, 1, 1), "winograd");    // 7x7: 49 pixels, ragged panels
  EXPECT_EQ(conv(256, 256, 8, 3, 1, 1), "gemm");        // 8x8: 64 pixels, full panels
  EXPECT_EQ(conv(128, 128, 56, 3, 2, 1), "gemm");       // stride 2
  EXPECT_EQ(conv(256, 64, 56, 1, 1, 1), "gemm");        // 1x1
  EXPECT_EQ(conv(96, 96, 112, 3, 2, 96), "depthwise");  // depthwise
}

TEST(ThreadPool, EveryIndexRunsExactlyOnce) {
  for (int threads : {1, 2, 3}) {
    ThreadPool pool(threads);
    EXPECT_EQ(pool.threads(), threads);
    for (size_t n : {size_t{0}, size_t{1}, size_t{7}, size_t{1000}}) {
      std::vector<std::atomic<int>> hits(n);
      pool.parallel_for(n, [&](size_t i) { hits[i]++; });
      for (size_t i = 0; i < n; ++i) EXPECT_EQ(hits[i].load(), 1) << threads << " " << i;
    }
    std::atomic<int> pairs{0};
    pool.parallel_for_2d(3, 5, [&](size_t i, size_t j) { pairs += static_cast<int>(i * 5 + j); });
    EXPECT_EQ(pairs.load(), 105);
  }
}

// parallel_phases: every thread once, at once; after sync() each sees what all wrote before
// it, round after round (4 threads on fewer cores: the waiting threads yield).
TEST(ThreadPool, PhasesSeeEveryThreadsWritesAfterSync) {
  for (int threads : {1, 2, 4}) {
    ThreadPool pool(threads);
    constexpr int kRounds = 200;
    std::vector<int> slot(static_cast<size_t>(threads), -1);
    std::atomic<int> bad{0}, calls{0};
    pool.parallel_phases([&](size_t t, auto sync) {
      calls++;
      for (int r = 0; r < kRounds; ++r) {
        slot[t] = r;
        sync();
        for (int u = 0; u < threads; ++u)
          if (slot[static_cast<size_t>(u)] != r) bad++;
        sync();  // nobody writes the next round before all have read this one
      }
    });
    EXPECT_EQ(calls.load(), threads);
    EXPECT_EQ(bad.load(), 0) << threads;
  }
}

}  // namespace
}  // namespace dlas

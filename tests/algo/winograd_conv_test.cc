// Winograd convolution and its transform kernels against the reference Conv.
#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "algo/conv_tester.h"
#include "algo/microkernels/f32-wino/f32_wino.h"
#include "dlas/core/error.h"

namespace dlas {
const ConvAlgorithm& winograd_conv_algorithm();
}

namespace dlas::test {
namespace {

const ConvAlgorithm& algo() { return winograd_conv_algorithm(); }

std::vector<ConvProblem> supported_problems() {
  std::vector<ConvProblem> out;
  for (const ConvProblem& p : generated_conv_problems())
    if (algo().supports(p)) out.push_back(p);
  // Bottom/right padding only, and a 1x1 output.
  ConvProblem q = out.front();
  q.c = 5, q.k = 9, q.h = 7, q.w = 10, q.pad_t = 0, q.pad_l = 0, q.pad_b = 2, q.pad_r = 1;
  out.push_back(q);
  q.h = 3, q.w = 3, q.pad_b = q.pad_r = 0;
  out.push_back(q);
  // A long reduction (C = 256): F(4,3)'s transform error must stay within the bound.
  q.c = 256, q.k = 20, q.h = 12, q.w = 12, q.pad_t = q.pad_l = q.pad_b = q.pad_r = 1;
  out.push_back(q);
  return out;
}

TEST(WinogradConv, SupportsOnly3x3Stride1Ungrouped) {
  int supported = 0;
  for (const ConvProblem& p : generated_conv_problems()) {
    const bool want = p.kh == 3 && p.kw == 3 && p.stride_h == 1 && p.dil_h == 1 && p.groups == 1;
    EXPECT_EQ(algo().supports(p), want) << p.key();
    supported += want;
  }
  EXPECT_GE(supported, 6);
}

TEST(WinogradConv, RejectsUnsupportedAndBadKnobs) {
  ConvProblem p = generated_conv_problems()[3];  // stride 2
  std::vector<float> w(static_cast<size_t>(p.weight_count()));
  EXPECT_THROW(algo().prepare(p, ConvWeights::f32(w.data(), nullptr),
                              algo().default_knobs(p, Isa::kScalar), Isa::kScalar),
               Error);
  p = generated_conv_problems()[0];
  w.resize(static_cast<size_t>(p.weight_count()));
  Knobs k = algo().default_knobs(p, Isa::kScalar);
  k["variant"] = 3;
  EXPECT_THROW(algo().prepare(p, ConvWeights::f32(w.data(), nullptr), k, Isa::kScalar), Error);
}

TEST(WinogradConv, DefaultKnobsGiveThreadsTwoTileBlocks) {
  // Narrow layers (channel-pruned VGG: c64 k28 32x32, 64 F(4,3) tiles) fit every tile in
  // one block; whole-block parallelism then needs the block halved, or one thread works.
  for (int64_t k : {28, 64, 8}) {
    const ConvProblem p =
        ConvProblem::from_key("c64_h32_w32_k" + std::to_string(k) + "_3x3_s1x1_p1x1x1x1_d1x1_g1");
    const Knobs kn = algo().default_knobs(p, Isa::kScalar);
    ASSERT_EQ(kn.at("variant"), 4);
    ASSERT_EQ(kn.at("parallel"), 0) << k;  // whole tile blocks (64 tiles)
    EXPECT_LE(kn.at("tile_block"), 32) << k;
  }
}

TEST(WinogradConv, DefaultKnobsEveryIsa) {
  for (Isa isa : supported_isas())
    for (const ConvProblem& p : supported_problems()) ConvTester().problem(p).test(algo(), isa);
}

TEST(WinogradConv, SampledKnobPoints) {
  for (Isa isa : supported_isas())
    for (const ConvProblem& p : supported_problems()) {
      const KnobSpace space = algo().knob_space(p, isa);
      // A stride co-prime with the radices walks every knob through its values.
      for (int64_t i = 0; i < space.size(); i += std::max<int64_t>(1, space.size() / 7))
        ConvTester().problem(p).test(algo(), isa, space.point(i));
    }
}

TEST(WinogradConv, BothVariantsBothParallelAxesTwoThreads) {
  for (Isa isa : supported_isas())
    for (const ConvProblem& p : supported_problems())
      for (int64_t m : {2, 4})
        for (int64_t par : {0, 1}) {
          Knobs k = algo().default_knobs(p, isa);
          k["variant"] = m, k["parallel"] = par, k["tile_block"] = 8;
          ConvTester().problem(p).threads(2).test(algo(), isa, k);
        }
}

TEST(WinogradConv, EveryGemmUkernel) {
  const ConvProblem p = generated_conv_problems()[2];  // 17 -> 23: K and C tails
  for (Isa isa : supported_isas()) {
    const KnobSpace space = algo().knob_space(p, isa);
    for (int64_t u : space.find("ukernel")->values)
      for (int64_t m : {2, 4}) {
        Knobs k = algo().default_knobs(p, isa);
        k["ukernel"] = u, k["variant"] = m;
        ConvTester().problem(p).test(algo(), isa, k);
      }
  }
}

TEST(WinogradConv, Epilogues) {
  ConvProblem base = generated_conv_problems()[1];  // 16->16, 9x11, pad 1
  for (Isa isa : supported_isas())
    for (int64_t m : {2, 4}) {
      Knobs k = algo().default_knobs(base, isa);
      k["variant"] = m;
      for (bool res : {false, true}) {
        ConvTester t;
        t.problem(base).residual(res);
        t.activation(Activation::kNone).test(algo(), isa, k);
        t.activation(Activation::kRelu).test(algo(), isa, k);
        t.activation(Activation::kClip, 0.f, 6.f).test(algo(), isa, k);
        t.activation(Activation::kClip, -0.5f, 0.5f).test(algo(), isa, k);
        t.activation(Activation::kSilu).test(algo(), isa, k);
        t.activation(Activation::kHardSwish).test(algo(), isa, k);
        t.activation(Activation::kSigmoid).test(algo(), isa, k);
        t.activation(Activation::kHardSigmoid, 0.2f, 0.5f).threads(2).test(algo(), isa, k);
      }
    }
}

TEST(WinogradConv, NoBias) {
  ConvProblem p = generated_conv_problems()[2];
  p.has_bias = false;
  for (Isa isa : supported_isas()) ConvTester().problem(p).test(algo(), isa);
}

// Every transform kernel the CPU can run equals the scalar one (same arithmetic order,
// so bit-exact apart from FMA contraction: compared with a tight relative bound).
TEST(F32WinoUkernels, MatchScalar) {
  const auto& all = ukernel::f32_wino_ukernels();
  const ukernel::F32WinoUkernel& ref = all.front();
  ASSERT_EQ(ref.isa, Isa::kScalar);
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> dist(-1.f, 1.f);
  int tested = 0;
  std::vector<ukernel::F32WinoUkernel> with_test_only = all;
  for (const auto& u : ukernel::f32_wino_test_only_ukernels()) with_test_only.push_back(u);
  for (const auto& u : with_test_only) {
    if (!isa_supported(u.isa)) continue;
    ++tested;
    for (int m : {2, 4})
      for (size_t n : {1u, 7u, 8u, 16u, 19u, 37u}) {
        const size_t a2 = static_cast<size_t>((m + 2) * (m + 2)), ld = n + 3;
        std::vector<float> d(a2 * ld), v0(a2 * ld, 0.f), v1(a2 * ld, 0.f);
        for (float& x : d) x = dist(rng);
        ref.input(m)(n, d.data(), ld, v0.data(), ld);
        u.input(m)(n, d.data(), ld, v1.data(), ld);
        for (size_t i = 0; i < v0.size(); ++i)
          ASSERT_NEAR(v0[i], v1[i], 1e-5f) << u.name << " input m=" << m << " n=" << n;
        const size_t mm = static_cast<size_t>(m * m);
        std::vector<float> o0(mm * ld, 0.f), o1(mm * ld, 0.f);
        ref.output(m)(n, d.data(), ld, o0.data(), ld, 0.25f, -1.f, 1.5f);
        u.output(m)(n, d.data(), ld, o1.data(), ld, 0.25f, -1.f, 1.5f);
        for (size_t i = 0; i < o0.size(); ++i)
          ASSERT_NEAR(o0[i], o1[i], 1e-5f) << u.name << " output m=" << m << " n=" << n;
      }
  }
  EXPECT_GE(tested, 1);
}

}  // namespace
}  // namespace dlas::test

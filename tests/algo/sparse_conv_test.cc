// The sparse conv algorithms (sparse-1x1, sparse-gemm, sparse-direct, sparse-spatial-pack)
// against the reference Conv (ConvTester) with weights masked to 0%, 50%, 90% and 100%
// sparsity: every ISA x generated problem at the default knobs, sampled knob points, every
// weight format / spatial-pack tile, structured masks (8x1 and 16x1 blocks with zeros
// inside, a single nonzero, empty and fully dense rows), reduction chunks, fused
// epilogues, two threads on every parallel axis, and knob validation.
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <string>

#include "algo/conv_tester.h"
#include "dlas/core/error.h"

namespace dlas::test {
namespace {

const double kSparsities[] = {0.0, 0.5, 0.9, 1.0};

class SparseConvTest : public ::testing::TestWithParam<std::string> {
 protected:
  const ConvAlgorithm& algo() const {
    const ConvAlgorithm* a = find_conv_algorithm(GetParam());
    EXPECT_NE(a, nullptr);
    return *a;
  }
};

TEST(SparseConvListTest, SparseAlgorithmsAreListedApart) {
  ASSERT_EQ(sparse_conv_algorithms().size(), 4u);
  for (const ConvAlgorithm* a : sparse_conv_algorithms()) {
    EXPECT_EQ(find_conv_algorithm(a->name()), a);
    EXPECT_EQ(std::count(conv_algorithms().begin(), conv_algorithms().end(), a), 0);
  }
}

TEST_P(SparseConvTest, GeneratedProblemsEverySparsity) {
  int tested = 0;
  for (Isa isa : supported_isas())
    for (const ConvProblem& p : generated_conv_problems()) {
      if (!algo().supports(p)) continue;
      for (double s : kSparsities) {
        ConvTester()
            .problem(p)
            .weight_sparsity(s)
            .seed(static_cast<uint32_t>(s * 100) + 3)
            .test(algo(), isa);
        ++tested;
      }
    }
  EXPECT_GT(tested, 0);
}

TEST_P(SparseConvTest, SampledKnobPoints) {
  for (Isa isa : supported_isas())
    for (const ConvProblem& p : generated_conv_problems()) {
      if (!algo().supports(p)) continue;
      const KnobSpace space = algo().knob_space(p, isa);
      const int64_t n = space.size(), samples = 6;
      for (int64_t s = 0; s < samples; ++s)
        ConvTester()
            .problem(p)
            .weight_sparsity(s % 2 ? 0.9 : 0.5)
            .threads(s % 3 == 0 ? 2 : 1)
            .test(algo(), isa, space.point((n / samples) * s + s % n));
    }
}

// Every format (auto, csr, bsr4x1, bsr8x1, bsr1x4) x vecs on shapes with channel tails;
// auto is also driven into its BSR choices by block-structured weights (sparsity 0).
// Deterministic pseudo-random bit of (a, b) with probability about `keep`.
bool hashed_keep(int64_t a, int64_t b, double keep) {
  uint64_t h = static_cast<uint64_t>(a) * 0x9E3779B97F4A7C15ull ^
               static_cast<uint64_t>(b + 7) * 0xC2B2AE3D27D4EB4Full;
  h ^= h >> 29;
  h *= 0xBF58476D1CE4E5B9ull;
  h ^= h >> 32;
  return static_cast<double>(h % 1000) < keep * 1000;
}

// Structured masks on shapes with channel tails (21 = 2x8 + 5 output channels), a strided
// one, at the defaults and with the reduction forced into 16-channel chunks (kc).
TEST_P(SparseConvTest, StructuredMasks) {
  ConvProblem p3, ps, p1;
  p3.c = 35, p3.k = 21, p3.h = 7, p3.w = 9, p3.kh = p3.kw = 3;
  p3.pad_t = p3.pad_l = p3.pad_b = p3.pad_r = 1, p3.has_bias = true;
  ps = p3, ps.stride_h = ps.stride_w = 2, ps.h = 10, ps.w = 11, ps.k = 40;
  p1.c = 37, p1.k = 29, p1.h = 5, p1.w = 6, p1.has_bias = true;
  struct Mask {
    const char* name;
    std::function<bool(int64_t, int64_t)> keep;
  };
  const Mask masks[] = {
      {"8x1 blocks", [](int64_t k, int64_t r) { return hashed_keep(k / 8, r, 0.15); }},
      {"16x1 blocks", [](int64_t k, int64_t r) { return hashed_keep(k / 16, r, 0.15); }},
      {"single", [](int64_t k, int64_t r) { return k == 13 && r == 40; }},
      {"empty rows", [](int64_t k, int64_t) { return k % 3 != 0; }},
  };
  for (Isa isa : supported_isas())
    for (const ConvProblem& p : {p3, ps, p1}) {
      if (!algo().supports(p)) continue;
      for (const Mask& m : masks)
        for (bool chunks : {false, true}) {
          SCOPED_TRACE(m.name);
          Knobs k = algo().default_knobs(p, isa);
          if (chunks && !k.count("kc")) continue;
          if (chunks) k["kc"] = 16;
          // No unstructured sparsity on top: "empty rows" keeps rows k%3 != 0 fully dense.
          ConvTester().problem(p).weight_mask(m.keep).test(algo(), isa, k);
        }
    }
}

TEST_P(SparseConvTest, EveryFormatAndTile) {
  ConvProblem p3, p1;
  p3.c = 19, p3.k = 21, p3.h = 9, p3.w = 11, p3.kh = p3.kw = 3;
  p3.pad_t = p3.pad_l = p3.pad_b = p3.pad_r = 1, p3.has_bias = true;
  p1.c = 37, p1.k = 29, p1.h = 7, p1.w = 13, p1.has_bias = true;
  for (Isa isa : supported_isas())
    for (const ConvProblem& p : {p3, p1}) {
      if (!algo().supports(p)) continue;
      const KnobSpace space = algo().knob_space(p, isa);
      if (!space.find("format")) continue;  // sparse-spatial-pack: EveryBlockAndTile
      for (int64_t f : space.find("format")->values)
        for (int64_t v : space.find("vecs")->values)
          for (double s : {0.0, 0.9}) {
            Knobs k = algo().default_knobs(p, isa);
            k["format"] = f, k["vecs"] = v;
            ConvTester().problem(p).weight_sparsity(s).test(algo(), isa, k);
          }
    }
}

TEST_P(SparseConvTest, FusedEpilogues) {
  struct Act {
    Activation a;
    float p0, p1;
  };
  const Act acts[] = {{Activation::kRelu, 0, 0},    {Activation::kClip, 0, 6},
                      {Activation::kSilu, 0, 0},    {Activation::kHardSwish, 0, 0},
                      {Activation::kSigmoid, 0, 0}, {Activation::kHardSigmoid, 0.2f, 0.5f},
                      {Activation::kNone, 0, 0}};
  for (Isa isa : supported_isas())
    for (const Act& act : acts)
      for (bool res : {false, true}) {
        ConvTester t;
        t.channels(17, 23).input(9, 11).kernel(3, 3).pad(1).bias(true);
        t.activation(act.a, act.p0, act.p1).residual(res).weight_sparsity(0.9);
        if (algo().supports(t.problem())) t.test(algo(), isa);
        ConvTester()
            .channels(24, 20)
            .input(7, 9)
            .kernel(1, 1)
            .bias(false)
            .activation(act.a, act.p0, act.p1)
            .residual(res)
            .weight_sparsity(0.5)
            .test(algo(), isa);
      }
}

TEST_P(SparseConvTest, TwoThreadsEveryParallelAxis) {
  for (Isa isa : supported_isas())
    for (const ConvProblem& p : generated_conv_problems()) {
      if (!algo().supports(p)) continue;
      const KnobSpace space = algo().knob_space(p, isa);
      const KnobSpec* axis = space.find("parallel");
      ASSERT_NE(axis, nullptr);
      for (int64_t v : axis->values) {
        Knobs k = algo().default_knobs(p, isa);
        k["parallel"] = v;
        if (k.count("nc")) k["nc"] = 64;  // several blocks, a ragged last one
        ConvProblem q = p;
        q.epilogue.act = Activation::kRelu;
        q.epilogue.residual = true;
        ConvTester().problem(q).threads(2).weight_sparsity(0.9).test(algo(), isa, k);
      }
    }
}

TEST_P(SparseConvTest, DefaultIsInTheSpaceAndBadKnobsAreRejected) {
  ConvProblem p = generated_conv_problems()[5];  // 1x1: both algorithms support it
  ASSERT_TRUE(algo().supports(p));
  const Isa isa = supported_isas().back();
  Knobs k = algo().default_knobs(p, isa);
  algo().knob_space(p, isa).validate(k, "test");
  std::vector<float> w(static_cast<size_t>(p.weight_count()), 0.f);
  const KnobSpace space = algo().knob_space(p, isa);
  EXPECT_GE(space.knobs.size(), 3u);
  for (const KnobSpec& spec : space.knobs) {
    Knobs kb = k;
    kb[spec.name] = 999;
    try {
      algo().prepare(p, ConvWeights::f32(w.data(), nullptr), kb, isa);
      ADD_FAILURE() << "bad knob " << spec.name << " accepted";
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::kInvalidInput);
    }
  }
}

TEST(Sparse1x1ConvTest, OnlyOneByOne) {
  const ConvAlgorithm* a = find_conv_algorithm("sparse-1x1");
  ASSERT_NE(a, nullptr);
  ConvProblem p = generated_conv_problems()[1];  // 3x3
  EXPECT_FALSE(a->supports(p));
  std::vector<float> w(static_cast<size_t>(p.weight_count()), 1.f);
  try {
    a->prepare(p, ConvWeights::f32(w.data(), nullptr), a->default_knobs(p, Isa::kScalar),
               Isa::kScalar);
    ADD_FAILURE() << "3x3 accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kUnsupported);
  }
}

// sparse-spatial-pack: every VC x tile shape (all instantiated, spilling ones included)
// on a shape with channel and pixel tails, plain and strided, 90% unstructured and 8x1
// blocks; both parallel axes on two threads.
TEST(SparseSpatialPackTest, EveryBlockAndTile) {
  const ConvAlgorithm* a = find_conv_algorithm("sparse-spatial-pack");
  ASSERT_NE(a, nullptr);
  ConvProblem p;
  p.c = 13, p.k = 21, p.h = 7, p.w = 9, p.kh = p.kw = 3, p.has_bias = true;
  p.pad_t = p.pad_l = p.pad_b = p.pad_r = 1;
  ConvProblem ps = p;
  ps.stride_h = ps.stride_w = 2, ps.k = 17, ps.dil_h = 2, ps.pad_t = ps.pad_b = 2;
  int tested = 0;
  for (Isa isa : supported_isas()) {
    const KnobSpace space = a->knob_space(p, isa);
    for (const ConvProblem& q : {p, ps})
      for (int64_t vc : space.find("vc")->values)
        for (int64_t vh : space.find("vh")->values)
          for (int64_t vw : space.find("vw")->values) {
            Knobs k = a->default_knobs(q, isa);
            k["vc"] = vc, k["vh"] = vh, k["vw"] = vw;
            k["parallel"] = (vh + vw) % 2;
            const bool blocks = (vh * vw) % 3 == 0;
            ConvTester t;
            t.problem(q).threads(vw == 4 ? 2 : 1).weight_sparsity(blocks ? 0.0 : 0.9);
            if (blocks)
              t.weight_mask([](int64_t k, int64_t r) { return hashed_keep(k / 8, r, 0.2); });
            t.test(*a, isa, k);
            ++tested;
          }
  }
  EXPECT_GT(tested, 0);
}

// sparse-direct writes output rows straight into NCHW when OW is a multiple of the lanes
// (2-D SpMM tiles): widths 8, 16, 24, 32 (stride 1 and 2, dilation), both parallel axes on
// two threads, reduction chunks, residual + activation, output rows not a multiple of the
// tile's rows.
TEST(SparseDirectConvTest, OutputRowsStraightIntoNchw) {
  const ConvAlgorithm* a = find_conv_algorithm("sparse-direct");
  ASSERT_NE(a, nullptr);
  struct Shape {
    int64_t h, w, stride, dil;
  };
  const Shape shapes[] = {{5, 8, 1, 1}, {7, 16, 1, 1}, {3, 32, 1, 1}, {9, 48, 2, 1}, {6, 24, 1, 2}};
  for (Isa isa : supported_isas())
    for (const Shape& sh : shapes)
      for (int64_t par : {0, 1})
        for (int64_t kc : {0, 16}) {
          ConvTester t;
          t.channels(35, 21).input(sh.h, sh.w).kernel(3, 3).stride(sh.stride).dilation(sh.dil);
          t.pad(sh.dil).bias(true).residual(par == 1).weight_sparsity(0.9);
          t.activation(kc ? Activation::kRelu : Activation::kSilu).threads(2);
          Knobs k = a->default_knobs(t.problem(), isa);
          k["parallel"] = par, k["kc"] = kc;
          t.test(*a, isa, k);
        }
}

TEST(SparseSpatialPackTest, DefaultTileFitsTheRegisters) {
  const ConvAlgorithm* a = find_conv_algorithm("sparse-spatial-pack");
  ASSERT_NE(a, nullptr);
  for (Isa isa : {Isa::kAvx2, Isa::kAvx512})
    for (const ConvProblem& p : generated_conv_problems()) {
      const Knobs k = a->default_knobs(p, isa);
      EXPECT_LE(k.at("vh") * k.at("vw") + 2, isa == Isa::kAvx512 ? 32 : 16) << p.key();
      a->knob_space(p, isa).validate(k, "default");
    }
}

INSTANTIATE_TEST_SUITE_P(Algos, SparseConvTest,
                         ::testing::Values("sparse-1x1", "sparse-gemm", "sparse-direct",
                                           "sparse-spatial-pack"),
                         [](const auto& info) {
                           std::string n = info.param;
                           std::replace(n.begin(), n.end(), '-', '_');
                           return n;
                         });

}  // namespace
}  // namespace dlas::test

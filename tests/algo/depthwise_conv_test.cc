// depthwise conv algorithm: every supported ISA x depthwise problem x knob point against
// the reference Conv (ConvTester), fused epilogues, two threads, and the 16-lane
// (AVX-512) kernel logic through its test-only AVX2 instantiation.
#include <gtest/gtest.h>

#include "algo/conv/depthwise_f32.h"
#include "algo/conv_tester.h"
#include "dlas/core/error.h"

namespace dlas::test {
namespace {

const ConvAlgorithm& algo() { return *find_conv_algorithm("depthwise"); }

ConvProblem dw(int64_t n, int64_t c, int64_t mult, int64_t h, int64_t w, int64_t kh, int64_t kw,
               int64_t s, int64_t pad, int64_t d = 1) {
  ConvProblem p;
  p.n = n, p.c = c, p.k = c * mult, p.h = h, p.w = w, p.kh = kh, p.kw = kw;
  p.stride_h = p.stride_w = s;
  p.pad_t = p.pad_l = p.pad_b = p.pad_r = pad;
  p.dil_h = p.dil_w = d;
  p.groups = c;
  p.has_bias = true;
  return p;
}

// The generated problems depthwise supports, plus its own edges.
std::vector<ConvProblem> problems() {
  std::vector<ConvProblem> out;
  for (const ConvProblem& p : generated_conv_problems())
    if (algo().supports(p)) out.push_back(p);
  out.push_back(dw(1, 5, 1, 17, 19, 3, 3, 1, 1));     // 3x3 s1, odd, W > 16 with a tail
  out.push_back(dw(1, 4, 1, 18, 37, 3, 3, 2, 1));     // 3x3 s2, even H, odd W
  out.push_back(dw(1, 3, 1, 21, 40, 5, 5, 1, 2));     // 5x5 s1, W > 32
  out.push_back(dw(1, 3, 1, 23, 35, 5, 5, 2, 2));     // 5x5 s2
  out.push_back(dw(1, 6, 1, 5, 3, 3, 3, 1, 1));       // W < every vector width
  out.push_back(dw(1, 3, 1, 4, 5, 5, 5, 2, 2));       // 5x5 s2 on a tiny plane
  out.push_back(dw(2, 4, 2, 9, 10, 3, 3, 2, 1));      // multiplier 2, batch 2, s2
  out.push_back(dw(1, 3, 3, 11, 9, 5, 5, 1, 2));      // multiplier 3, 5x5
  out.push_back(dw(1, 4, 1, 15, 15, 3, 3, 1, 0));     // no padding
  out.push_back(dw(1, 4, 1, 13, 14, 3, 3, 3, 1));     // stride 3 (generic body)
  out.push_back(dw(1, 4, 1, 12, 13, 3, 3, 2, 2, 2));  // stride 2 + dilation 2
  out.push_back(dw(1, 2, 1, 9, 11, 7, 7, 1, 3));      // 7x7 (generic body)
  out.push_back(dw(1, 7, 1, 7, 7, 3, 3, 1, 1));       // MobileNetV2's 7x7 planes
  // Small planes with many channels (the channel-blocked layout's home): channel counts
  // that are and are not lane multiples, 1x1 planes, stride 2 onto 1x1 outputs.
  out.push_back(dw(1, 40, 1, 4, 4, 3, 3, 1, 1));
  out.push_back(dw(1, 37, 1, 2, 2, 3, 3, 1, 1));
  out.push_back(dw(1, 19, 1, 7, 7, 5, 5, 1, 2));
  out.push_back(dw(1, 33, 1, 1, 1, 3, 3, 1, 1));
  out.push_back(dw(1, 24, 1, 8, 8, 5, 5, 2, 2));
  out.push_back(dw(1, 17, 1, 2, 2, 3, 3, 2, 1));
  out.push_back(dw(2, 11, 2, 4, 4, 3, 3, 1, 1));    // multiplier 2, batch 2
  ConvProblem a = dw(1, 3, 1, 12, 17, 3, 5, 2, 0);  // non-square kernel, asymmetric pads
  a.pad_t = 2, a.pad_l = 1, a.pad_b = 0, a.pad_r = 3;
  a.stride_h = 1;
  out.push_back(a);
  ConvProblem b = dw(1, 3, 1, 10, 33, 3, 3, 1, 1);  // stride (1, 2)
  b.stride_w = 2;
  out.push_back(b);
  return out;
}

TEST(DepthwiseConv, ListedAndChosenByAuto) {
  ASSERT_NE(find_conv_algorithm("depthwise"), nullptr);
  const ConvProblem p = dw(1, 16, 1, 8, 8, 3, 3, 1, 1);
  EXPECT_EQ(auto_conv_algorithm(p, active_isa()).name(), "depthwise");
  ConvProblem g = p;
  g.groups = 4;
  EXPECT_FALSE(algo().supports(g));
}

TEST(DepthwiseConv, AllKnobPointsAllIsas) {
  for (Isa isa : supported_isas())
    for (const ConvProblem& p : problems()) {
      const KnobSpace space = algo().knob_space(p, isa);
      for (int64_t i = 0; i < space.size(); ++i) {
        ConvTester t;
        t.problem(p);
        if (!t.test(algo(), isa, space.point(i))) return;  // one failing case is enough
      }
    }
}

TEST(DepthwiseConv, DefaultLayoutFollowsPlaneSize) {
  EXPECT_EQ(algo().default_knobs(dw(1, 96, 1, 4, 4, 3, 3, 1, 1), Isa::kAvx2).at("layout"), 1);
  EXPECT_EQ(algo().default_knobs(dw(1, 96, 1, 8, 8, 3, 3, 1, 1), Isa::kAvx2).at("layout"), 1);
  EXPECT_EQ(algo().default_knobs(dw(1, 32, 1, 32, 32, 3, 3, 1, 1), Isa::kAvx2).at("layout"), 1);
  EXPECT_EQ(algo().default_knobs(dw(1, 32, 1, 56, 56, 3, 3, 1, 1), Isa::kAvx2).at("layout"), 0);
}

TEST(DepthwiseConv, DefaultKnobsAreInTheSpace) {
  for (const ConvProblem& p : problems())
    for (Isa isa : supported_isas())
      EXPECT_NO_THROW(algo().knob_space(p, isa).validate(algo().default_knobs(p, isa), "t"));
}

TEST(DepthwiseConv, EpiloguesAndThreads) {
  struct Act {
    Activation a;
    float p0, p1;
  };
  const Act acts[] = {{Activation::kNone, 0, 0},    {Activation::kRelu, 0, 0},
                      {Activation::kClip, 0, 6},    {Activation::kClip, -0.3f, 0.4f},
                      {Activation::kSilu, 0, 0},    {Activation::kHardSwish, 0, 0},
                      {Activation::kSigmoid, 0, 0}, {Activation::kHardSigmoid, 0.2f, 0.5f}};
  const ConvProblem ps[] = {dw(2, 5, 1, 13, 19, 3, 3, 1, 1), dw(1, 6, 2, 11, 9, 3, 3, 2, 1),
                            dw(1, 3, 1, 14, 21, 5, 5, 1, 2), dw(1, 21, 1, 4, 4, 3, 3, 1, 1),
                            dw(1, 10, 2, 5, 3, 3, 3, 2, 1)};
  for (Isa isa : supported_isas())
    for (const ConvProblem& p : ps)
      for (const Act& a : acts)
        for (bool res : {false, true})
          for (int threads : {1, 2})
            for (int64_t axis : {0, 1})
              for (int64_t layout : {0, 1}) {
                ConvTester t;
                t.problem(p).activation(a.a, a.p0, a.p1).residual(res).threads(threads);
                Knobs k = algo().default_knobs(p, isa);
                k["parallel"] = axis;
                k["layout"] = layout;
                if (!t.test(algo(), isa, k)) return;
              }
}

TEST(DepthwiseConv, NoBias) {
  ConvTester t;
  t.problem(dw(1, 4, 1, 9, 9, 3, 3, 1, 1)).bias(false);
  for (Isa isa : supported_isas()) t.test(algo(), isa);
}

// Runs the algorithm with a fixed kernel set (the test-only 16-lane AVX2 instantiation).
class WithKernels final : public ConvAlgorithm {
 public:
  explicit WithKernels(const ukernel::F32DwconvKernels& k) : k_(k) {}
  std::string_view name() const override { return "depthwise-16lane"; }
  bool supports(const ConvProblem& p) const override { return algo().supports(p); }
  KnobSpace knob_space(const ConvProblem& p, Isa isa) const override {
    return algo().knob_space(p, isa);
  }
  Knobs default_knobs(const ConvProblem& p, Isa isa) const override {
    return algo().default_knobs(p, isa);
  }
  std::unique_ptr<PreparedConv> prepare(const ConvProblem& p, const ConvWeights& w,
                                        const Knobs& knobs, Isa isa) const override {
    return prepare_depthwise(p, w.f32_data(), w.bias, knobs, isa, k_);
  }

 private:
  const ukernel::F32DwconvKernels& k_;
};

TEST(DepthwiseConv, SixteenLaneLogicOnAvx2) {
  if (!isa_supported(Isa::kAvx2)) GTEST_SKIP() << "no AVX2";
  const WithKernels a(ukernel::f32_dwconv_16lane__avx2);
  EXPECT_EQ(ukernel::f32_dwconv_16lane__avx2.lanes, 16);
  for (const ConvProblem& p : problems()) {
    const KnobSpace space = a.knob_space(p, Isa::kAvx2);
    for (int64_t i = 0; i < space.size(); ++i) {
      ConvTester t;
      t.problem(p).activation(Activation::kClip, 0.f, 6.f).residual(i % 2 == 1);
      if (!t.test(a, Isa::kAvx2, space.point(i))) return;
    }
  }
}

TEST(DepthwiseConv, RejectsBadKnobsAndProblems) {
  const ConvProblem p = dw(1, 4, 1, 8, 8, 3, 3, 1, 1);
  std::vector<float> w(static_cast<size_t>(p.weight_count()));
  Knobs k = algo().default_knobs(p, Isa::kScalar);
  k["rows"] = 3;
  try {
    algo().prepare(p, ConvWeights::f32(w.data(), nullptr), k, Isa::kScalar);
    ADD_FAILURE() << "rows=3 accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kInvalidInput);
    EXPECT_NE(std::string(e.what()).find("rows"), std::string::npos) << e.what();
  }
  ConvProblem g = p;
  g.groups = 2;
  try {
    algo().prepare(g, ConvWeights::f32(w.data(), nullptr), algo().default_knobs(g, Isa::kScalar),
                   Isa::kScalar);
    ADD_FAILURE() << "groups=2 accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kUnsupported);
  }
}

}  // namespace
}  // namespace dlas::test

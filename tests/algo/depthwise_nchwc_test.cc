// depthwise on blocked layouts (nchw8c / nchw16c) and its tile kernels against the
// reference Conv, through the ConvTester's layouts (input reordered in with finite non-zero
// padding lanes, output reordered back).
#include <gtest/gtest.h>

#include "algo/conv/depthwise_nchwc_f32.h"
#include "algo/conv_tester.h"
#include "dlas/core/error.h"

namespace dlas::test {
namespace {

const ConvAlgorithm& algo() { return depthwise_nchwc_conv_algorithm(); }

// Every kernel set this CPU runs, production and test-only.
std::vector<const ukernel::F32DwNchwcUkernels*> kernel_sets() {
  std::vector<const ukernel::F32DwNchwcUkernels*> out;
  for (const auto* list :
       {&ukernel::f32_dwnchwc_ukernels(), &ukernel::f32_dwnchwc_test_only_ukernels()})
    for (const ukernel::F32DwNchwcUkernels& u : *list)
      if (isa_supported(u.isa)) out.push_back(&u);
  return out;
}

Layout layout_of(const ukernel::F32DwNchwcUkernels& u) {
  return u.lanes == 16 ? Layout::kNchw16c : Layout::kNchw8c;
}

// A depthwise problem of c channels, k x k kernel on an h x h input.
ConvProblem dw(int64_t c, int64_t h, int64_t k, int64_t stride, int64_t pad, int64_t dil = 1) {
  ConvProblem p;
  p.n = 2, p.c = p.k = p.groups = c;
  p.h = p.w = h;
  p.kh = p.kw = k;
  p.stride_h = p.stride_w = stride;
  p.pad_t = p.pad_l = p.pad_b = p.pad_r = pad;
  p.dil_h = p.dil_w = dil;
  p.has_bias = true;
  return p;
}

// Shapes: odd channel counts, 3x3 / 5x5 / 7x7, stride 1 / 2 / 3, padding, dilation,
// outputs from 1x1 to 7x7 and a wider row that needs several tiles.
std::vector<ConvProblem> problems() {
  std::vector<ConvProblem> out;
  for (int64_t c : {3, 13, 24, 40}) {
    out.push_back(dw(c, 7, 3, 1, 1));     // 7x7
    out.push_back(dw(c, 7, 3, 2, 1));     // 4x4
    out.push_back(dw(c, 4, 3, 2, 1));     // 2x2
    out.push_back(dw(c, 1, 3, 1, 1));     // 1x1, only the centre tap inside
    out.push_back(dw(c, 7, 5, 1, 2));     // 7x7
    out.push_back(dw(c, 7, 7, 1, 3));     // 7x7, every pixel an edge
    out.push_back(dw(c, 9, 3, 1, 2, 2));  // dilation 2: 9x9
    out.push_back(dw(c, 3, 3, 1, 0));     // 1x1 unpadded
  }
  out.push_back(dw(24, 23, 3, 1, 1));  // 23-pixel rows: tiles and a tail
  out.push_back(dw(13, 23, 5, 2, 2));  // 12x12
  out.push_back(dw(13, 11, 3, 3, 1));  // stride 3 (pixel step read at run time): 4x4
  ConvProblem a = dw(13, 6, 3, 1, 1);  // asymmetric padding and stride
  a.pad_t = 0, a.pad_l = 2, a.pad_b = 1, a.pad_r = 0, a.stride_h = 2;
  out.push_back(a);
  return out;
}

bool run_set(const ConvProblem& p, const ukernel::F32DwNchwcUkernels& u, Knobs knobs,
             int threads = 1) {
  const ConvTester t = ConvTester().problem(p).threads(threads);
  if (knobs.empty()) knobs = algo().default_knobs(p, u.isa);
  return t.test_with(
      [&](const ConvProblem& q, const ConvWeights& w) {
        return prepare_depthwise_nchwc(q, w, knobs, u.isa, u);
      },
      std::string(u.name) + " " + p.key(), knobs);
}

TEST(DepthwiseNchwcConv, SupportsBlockedMultiplierOneOnly) {
  ConvProblem p = dw(13, 7, 3, 1, 1);
  EXPECT_FALSE(algo().supports(p)) << "NCHW";
  p.set_layouts(Layout::kNchw16c, Layout::kNchw16c);
  EXPECT_TRUE(algo().supports(p));
  p.set_layouts(Layout::kNchw, Layout::kNchw16c);
  EXPECT_FALSE(algo().supports(p)) << "NCHW input";
  ConvProblem m = dw(8, 7, 3, 1, 1);
  m.k = 16;  // channel multiplier 2
  m.set_layouts(Layout::kNchw8c, Layout::kNchw8c);
  EXPECT_FALSE(algo().supports(m));
  // The list row sends blocked depthwise problems here and NCHW ones to the NCHW kernels.
  const ConvAlgorithm* row = find_conv_algorithm("depthwise");
  ASSERT_NE(row, nullptr);
  EXPECT_TRUE(row->supports(dw(13, 7, 3, 1, 1).set_layouts(Layout::kNchw8c, Layout::kNchw8c)));
  EXPECT_TRUE(row->supports(dw(13, 7, 3, 1, 1)));
  EXPECT_TRUE(conv_algorithm_has_blocked("depthwise"));
}

TEST(DepthwiseNchwcConv, RejectsIsaWithoutTheBlockWidth) {
  ConvProblem p = dw(13, 7, 3, 1, 1);
  p.set_layouts(Layout::kNchw16c, Layout::kNchw16c);
  std::vector<float> w(static_cast<size_t>(p.weight_count()));
  for (Isa isa : {Isa::kScalar, Isa::kAvx2})
    EXPECT_THROW(algo().prepare(p, ConvWeights::f32(w.data()), algo().default_knobs(p, isa), isa),
                 Error);
}

TEST(DepthwiseNchwcConv, DefaultKnobsEveryKernelSet) {
  if (kernel_sets().empty()) GTEST_SKIP() << "no AVX2";
  for (const auto* u : kernel_sets())
    for (ConvProblem p : problems()) {
      p.set_layouts(layout_of(*u), layout_of(*u));
      ASSERT_TRUE(algo().supports(p)) << p.key();
      run_set(p, *u, {});
      run_set(p, *u, {}, 2);
    }
}

TEST(DepthwiseNchwcConv, EveryTileWidth) {
  for (const auto* u : kernel_sets())
    for (ConvProblem p : {dw(13, 23, 3, 1, 1), dw(24, 23, 3, 2, 1)}) {
      p.set_layouts(layout_of(*u), layout_of(*u));
      const KnobSpace space = algo().knob_space(p, u->isa);
      for (int64_t i = 0; i < space.size(); ++i)
        if (!run_set(p, *u, space.point(i), 2)) break;
    }
}

TEST(DepthwiseNchwcConv, Epilogues) {
  for (const auto* u : kernel_sets())
    for (ConvProblem base : {dw(13, 7, 3, 1, 1), dw(40, 8, 3, 2, 1)}) {
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
          run_set(p, *u, {}, 2);
        }
    }
}

}  // namespace
}  // namespace dlas::test

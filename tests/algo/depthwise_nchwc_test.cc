// depthwise on blocked layouts (nchw8c / nchw16c) and its tile kernels against the
// reference Conv, through the ConvTester's layouts (input reordered in with finite non-zero
// padding lanes, output reordered back).
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <string>

#include "algo/conv/depthwise_nchwc_f32.h"
#include "algo/conv_tester.h"
#include "dlas/core/dtype.h"
#include "dlas/core/error.h"
#include "dlas/hw/thread_pool.h"

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

// bf16 on bf16 blocks: every bf16 set this CPU runs (production and test-only) against its
// f32 twin set on the exactly widened tensors, the output rounded to bf16 once -- what the
// widened path computes -- bit for bit, padding lanes included. Every shape of problems(),
// a spread of tile widths, fused (clamp) and tile-wise (SiLU, hard-swish) activations, a
// residual, one and two threads.
TEST(DepthwiseNchwcConv, Bf16BlocksEqualTheWidenedTwinBitForBit) {
  std::vector<std::pair<const ukernel::Bf16DwNchwcUkernels*, const ukernel::F32DwNchwcUkernels*>>
      sets;
  for (const auto* list :
       {&ukernel::bf16_dwnchwc_ukernels(), &ukernel::bf16_dwnchwc_test_only_ukernels()})
    for (const ukernel::Bf16DwNchwcUkernels& b : *list) {
      if (!isa_supported(b.isa)) continue;
      const std::string twin = "f32" + std::string(b.name).substr(4);
      for (const auto* u : kernel_sets())
        if (twin == u->name) sets.push_back({&b, u});
    }
  if (sets.empty()) GTEST_SKIP() << "no AVX2";
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> d(-2.f, 2.f);
  const Activation acts[] = {Activation::kNone, Activation::kRelu, Activation::kClip,
                             Activation::kSilu, Activation::kHardSwish};
  int cases = 0;
  for (const auto& [bset, fset] : sets)
    for (ConvProblem base : problems()) {
      const Activation act = acts[cases % 5];
      const bool res = cases % 3 == 0;
      const int threads = 1 + cases % 2;
      ++cases;
      base.epilogue.act = act;
      base.epilogue.p1 = act == Activation::kClip ? 1.5f : 0.f;
      base.epilogue.residual = res;
      ConvProblem q = base;  // bf16 on blocks
      q.set_half(DType::kBF16).set_layouts(Layout::kNchw16c, Layout::kNchw16c);
      ConvProblem f = base;  // the f32 twin on blocks
      f.set_layouts(Layout::kNchw16c, Layout::kNchw16c);
      ASSERT_TRUE(bf16_blocked_depthwise_applies(q, Isa::kAvx512) || !isa_supported(Isa::kAvx512));
      const int64_t hw = q.h * q.w, ohw = q.oh() * q.ow();
      const size_t nx = static_cast<size_t>(layout_numel(q.n, q.c, hw, Layout::kNchw16c));
      const size_t ny = static_cast<size_t>(layout_numel(q.n, q.k, ohw, Layout::kNchw16c));
      std::vector<uint16_t> x(nx), r(ny), w(static_cast<size_t>(q.weight_count()));
      std::vector<float> xf(nx), rf(ny), wf(w.size()), bias(static_cast<size_t>(q.k));
      for (size_t i = 0; i < nx; ++i) x[i] = f32_to_bf16(d(rng)), xf[i] = bf16_to_f32(x[i]);
      for (size_t i = 0; i < ny; ++i) r[i] = f32_to_bf16(d(rng)), rf[i] = bf16_to_f32(r[i]);
      for (size_t i = 0; i < w.size(); ++i) w[i] = f32_to_bf16(d(rng)), wf[i] = bf16_to_f32(w[i]);
      for (float& b : bias) b = d(rng);
      Knobs knobs = algo().default_knobs(f, fset->isa);
      if (cases % 4 == 1) knobs["pw"] = 3;
      ThreadPool pool(threads);
      const auto native = prepare_bf16_blocked_depthwise(
          q, ConvWeights::half(w.data(), bias.data()), knobs, bset->isa, bset);
      EXPECT_STREQ(conv_compute_name(native->compute()), "f32-on-16bit");
      const auto twin = prepare_depthwise_nchwc(f, ConvWeights::f32(wf.data(), bias.data()), knobs,
                                                fset->isa, *fset);
      std::vector<char> ws(
          std::max(native->workspace_bytes(threads), twin->workspace_bytes(threads)) + 64);
      std::vector<uint16_t> y(ny, 0xffff);
      std::vector<float> yf(ny, -1.f);
      native->run(x.data(), y.data(), res ? r.data() : nullptr, ws.data(), pool);
      twin->run(xf.data(), yf.data(), res ? rf.data() : nullptr, ws.data(), pool);
      size_t bad = 0, first = 0;
      for (size_t i = 0; i < ny; ++i)
        if (y[i] != f32_to_bf16(yf[i]) && bad++ == 0) first = i;
      ASSERT_EQ(bad, 0u) << bset->name << " " << q.key() << " act " << static_cast<int>(act)
                         << " residual " << res << " " << knobs_to_string(knobs) << ": first at "
                         << first << " " << y[first] << " vs " << f32_to_bf16(yf[first]);
    }
  EXPECT_GT(cases, 0);
}

}  // namespace
}  // namespace dlas::test

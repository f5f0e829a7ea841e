// The fp16 / bf16 conv algorithms (hconv.h) against reference_hconv (ConvTester): every
// algorithm x supported_isa_levels() x generated problem x f16/bf16 at the default knobs, a
// sampled set of knob points, every fused epilogue, two threads. Paths this CPU lacks are
// skipped, never failed; their native kernels' logic runs here through exact instruction
// models (HConvNativeLogic*, h16_native_logic__avx2.cc). On an AVX512-FP16 / AMX machine:
//   build/dlas_tests --gtest_filter='HConv*:H16*'
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>

#include "algo/conv/conv_impl.h"
#include "algo/conv/gemm_h16.h"
#include "algo/conv_tester.h"
#include "algo/h16_emulation.h"
#include "algo/h16_native_logic.h"
#include "algo/microkernels/h16-gemm/h16_gemm.h"
#include "algo/microkernels/h16-vblock/h16_vblock.h"
#include "algo/microkernels/h16-vcvt/h16_vcvt.h"
#include "dlas/core/error.h"

namespace dlas::test {
namespace {

constexpr DType kTypes[] = {DType::kF16, DType::kBF16};

class HConvAlgoTest : public ::testing::TestWithParam<std::string> {
 protected:
  const ConvAlgorithm& algo() const {
    const ConvAlgorithm* a = find_conv_algorithm(GetParam());
    EXPECT_NE(a, nullptr);
    return *a;
  }
  static ConvProblem hp(const ConvProblem& c, DType t) {
    ConvProblem p = c;
    p.set_half(t);
    return p;
  }
};

TEST_P(HConvAlgoTest, GeneratedProblemsDefaultKnobs) {
  int tested = 0;
  for (Isa isa : supported_isa_levels())
    for (DType t : kTypes)
      for (const ConvProblem& c : generated_conv_problems()) {
        if (!algo().supports(hp(c, t))) continue;
        ConvTester().problem(c).half_type(t).test(algo(), isa);
        ++tested;
      }
  EXPECT_GT(tested, 0);
}

TEST_P(HConvAlgoTest, SampledKnobPointsTwoThreads) {
  for (Isa isa : supported_isa_levels())
    for (DType t : kTypes)
      for (const ConvProblem& c : generated_conv_problems()) {
        if (!algo().supports(hp(c, t))) continue;
        const KnobSpace space = algo().knob_space(hp(c, t), isa);
        const int64_t n = space.size(), samples = 3;
        for (int64_t s = 0; s < samples; ++s)
          ConvTester().problem(c).half_type(t).threads(2).test(
              algo(), isa, space.point((n / samples) * s + s % n));
      }
}

TEST_P(HConvAlgoTest, FusedEpilogues) {
  struct Act {
    Activation a;
    float p0, p1;
  };
  const Act acts[] = {{Activation::kRelu, 0, 0},    {Activation::kClip, 0, 6},
                      {Activation::kSilu, 0, 0},    {Activation::kHardSwish, 0, 0},
                      {Activation::kSigmoid, 0, 0}, {Activation::kNone, 0, 0}};
  ConvProblem c3;  // 3x3, odd sizes, channels off every vector width
  c3.c = 17, c3.k = 23, c3.h = 9, c3.w = 11, c3.kh = c3.kw = 3;
  c3.pad_t = c3.pad_l = c3.pad_b = c3.pad_r = 1;
  c3.has_bias = true;
  ConvProblem dw = c3;  // depthwise
  dw.c = dw.k = dw.groups = 16;
  for (Isa isa : supported_isa_levels())
    for (DType t : kTypes)
      for (const Act& act : acts)
        for (bool res : {false, true})
          for (const ConvProblem& c : {c3, dw}) {
            if (!algo().supports(hp(c, t))) continue;
            ConvTester()
                .problem(c)
                .half_type(t)
                .activation(act.a, act.p0, act.p1)
                .residual(res)
                .threads(2)
                .test(algo(), isa);
          }
}

TEST_P(HConvAlgoTest, ComputeLabelFollowsIsa) {
  ConvProblem c;
  c.c = 16, c.k = 16, c.h = 8, c.w = 8, c.kh = c.kw = 3, c.pad_t = c.pad_l = c.pad_b = c.pad_r = 1;
  for (Isa isa : supported_isa_levels())
    for (DType t : kTypes) {
      if (!algo().supports(hp(c, t))) continue;
      std::vector<uint16_t> w(static_cast<size_t>(c.weight_count()), 0);
      auto pc = algo().prepare(hp(c, t), ConvWeights::half(w.data(), nullptr),
                               algo().default_knobs(hp(c, t), isa), isa);
      ConvCompute want = ConvCompute::kEmulated;
      if (algo().name() == "gemm" && t == DType::kF16 && isa >= Isa::kAvx512Fp16)
        want = ConvCompute::kNativeFp16;
      if (algo().name() == "gemm" && t == DType::kBF16 && isa >= Isa::kAvx512Bf16)
        want = isa >= Isa::kAmx ? ConvCompute::kAmxBf16 : ConvCompute::kNativeBf16;
      if (algo().name() == "direct" && hconv_detail::amx_direct_applies(hp(c, t), isa))
        want = ConvCompute::kAmxBf16;
      EXPECT_EQ(conv_compute_name(pc->compute()), std::string(conv_compute_name(want)))
          << algo().name() << " " << isa_name(isa) << " " << dtype_name(t);
    }
}

INSTANTIATE_TEST_SUITE_P(All, HConvAlgoTest,
                         ::testing::Values("gemm", "direct", "depthwise", "winograd",
                                           "spatial-pack"),
                         [](const auto& info) {
                           std::string s = info.param;
                           for (char& ch : s)
                             if (ch == '-') ch = '_';
                           return s;
                         });

// bf16 `direct` on the amx path: the AMX implicit GEMM (pair-interleaved padded
// planes read in place on the virtual grid of padded-width rows, amx_direct_grid.h) on shapes that
// cross every edge it has: channels off 32 (panels and input blocks with padding channels), runs
// that cross rows and hold dropped columns (4x4, 8x8, 6x3, 14x14 with padding), an odd
// number of runs (a tile with one run), asymmetric padding, unpadded 1x1 (no dropped
// columns) and 5x5, strides 2 (stride phases; a 1x1 stride 2 uses one), batch 2, every
// activation, with and without a residual.
TEST(HConvAmxDirect, MatchesReference) {
  if (!isa_supported(Isa::kAmx)) GTEST_SKIP() << "needs AMX";
  const ConvAlgorithm* direct = find_conv_algorithm("direct");
  ASSERT_NE(direct, nullptr);
  struct Shape {
    int64_t n, c, k, h, w, kh, kw, pt, pl, pb, pr, sh, sw;
  };
  const Shape shapes[] = {
      {1, 64, 64, 32, 32, 3, 3, 1, 1, 1, 1, 1, 1}, {2, 17, 23, 9, 21, 3, 3, 0, 2, 1, 0, 1, 1},
      {1, 48, 40, 16, 16, 1, 1, 0, 0, 0, 0, 1, 1}, {1, 16, 33, 7, 19, 5, 5, 2, 2, 2, 2, 1, 1},
      {1, 96, 16, 3, 47, 3, 3, 1, 1, 1, 1, 1, 1},  {1, 40, 72, 7, 7, 1, 1, 0, 0, 0, 0, 1, 1},
      {1, 64, 48, 8, 8, 3, 3, 1, 1, 1, 1, 1, 1},   {1, 256, 40, 4, 4, 3, 3, 1, 1, 1, 1, 1, 1},
      {2, 33, 17, 6, 3, 3, 3, 1, 0, 1, 2, 1, 1},   {1, 32, 32, 14, 14, 1, 1, 1, 1, 1, 1, 1, 1},
      {1, 64, 40, 32, 32, 3, 3, 1, 1, 1, 1, 2, 2}, {2, 37, 23, 9, 21, 3, 3, 0, 2, 1, 0, 2, 1},
      {1, 48, 40, 16, 16, 1, 1, 0, 0, 0, 0, 2, 2}, {1, 16, 33, 7, 19, 5, 5, 2, 2, 2, 2, 1, 2},
      {1, 64, 48, 8, 8, 3, 3, 1, 1, 1, 1, 2, 2}};
  int tested = 0;
  for (size_t i = 0; i < std::size(shapes); ++i)
    for (Activation act : {Activation::kNone, Activation::kRelu, Activation::kSilu}) {
      // Every activation per shape; residual on alternate ones.
      const Shape& sh = shapes[i];
      const bool res = (i + static_cast<size_t>(act)) % 2 == 1;
      ConvProblem c;
      c.n = sh.n, c.c = sh.c, c.k = sh.k, c.h = sh.h, c.w = sh.w, c.kh = sh.kh, c.kw = sh.kw;
      c.pad_t = sh.pt, c.pad_l = sh.pl, c.pad_b = sh.pb, c.pad_r = sh.pr;
      c.stride_h = sh.sh, c.stride_w = sh.sw;
      c.has_bias = true;
      ConvProblem h = c;
      h.set_half(DType::kBF16);
      ASSERT_TRUE(hconv_detail::amx_direct_applies(h, Isa::kAmx)) << h.key();
      for (int64_t order : {0, 1})
        ConvTester()
            .problem(c)
            .half_type(DType::kBF16)
            .activation(act, 0, 0)
            .residual(res)
            .threads(2)
            .test(*direct, Isa::kAmx, Knobs{{"order", order}, {"group", order ? 1 : 4}});
      ++tested;
    }
  EXPECT_EQ(tested, 45);
}

// 16-bit depthwise on an AVX-512 path: chunks of whole 16-channel blocks through the f32
// blocked twin (h16-vblock in and out) -- channel counts off the block (a partial last
// block), strides 1 and 2, planes from 3x3 to 57x23 (pixel tails of every length), enough
// channels for several chunks, every activation, 1 and 2 threads, both types.
TEST(HConvDepthwise, BlockedChunksMatchReference) {
  if (!isa_supported(Isa::kAvx512)) GTEST_SKIP() << "needs avx512";
  const ConvAlgorithm* dwc = find_conv_algorithm("depthwise");
  ASSERT_NE(dwc, nullptr);
  struct Shape {
    int64_t c, h, w, k, s;
  };
  const Shape shapes[] = {{40, 14, 14, 3, 1}, {16, 3, 3, 3, 1},    {96, 57, 23, 3, 2},
                          {33, 7, 7, 5, 1},   {144, 28, 28, 3, 2}, {18, 9, 31, 3, 1}};
  int tested = 0;
  for (DType t : {DType::kBF16, DType::kF16})
    for (const Shape& sh : shapes)
      for (Activation act : {Activation::kNone, Activation::kClip, Activation::kSilu}) {
        ConvProblem c;
        c.c = c.k = c.groups = sh.c, c.h = sh.h, c.w = sh.w, c.kh = c.kw = sh.k;
        c.pad_t = c.pad_l = c.pad_b = c.pad_r = sh.k / 2;
        c.stride_h = c.stride_w = sh.s;
        c.has_bias = true;
        for (int threads : {1, 2})
          ConvTester()
              .problem(c)
              .half_type(t)
              .activation(act, 0, act == Activation::kClip ? 6.f : 0.f)
              .threads(threads)
              .test(*dwc, Isa::kAvx512);
        ++tested;
      }
  EXPECT_EQ(tested, 36);
}

// 16-bit convs on 16-bit channel blocks (nchw16c), the layout a plan keeps between blocked
// 16-bit layers: every algorithm with a blocked implementation on every generated problem it
// supports, blocked input or (stems) NCHW input, f16 and bf16, every fused epilogue with and
// without a residual, two threads; padding lanes of the inputs hold 3 (ConvTester).
TEST(HConvBlocked, EveryAlgorithmOnBlocksMatchesReference) {
  if (!isa_supported(Isa::kAvx512)) GTEST_SKIP() << "needs avx512";
  int tested = 0;
  for (const char* name : {"direct", "depthwise", "winograd", "gemm", "spatial-pack"}) {
    const ConvAlgorithm* a = find_conv_algorithm(name);
    ASSERT_NE(a, nullptr);
    for (Isa isa : supported_isa_levels()) {
      if (native_blocked_layout(isa) != Layout::kNchw16c) continue;
      for (DType t : kTypes)
        for (const ConvProblem& c : generated_conv_problems())
          for (Layout x : {Layout::kNchw16c, Layout::kNchw}) {
            ConvProblem b = c;
            b.set_half(t).set_layouts(x, Layout::kNchw16c);
            if (!a->supports(b)) continue;
            ConvTester()
                .problem(c)
                .half_type(t)
                .layouts(x, Layout::kNchw16c)
                .threads(2)
                .test(*a, isa);
            ++tested;
          }
    }
  }
  EXPECT_GT(tested, 0);
  // gemm and spatial-pack have no blocked 16-bit implementation: a plan keeps their layers NCHW.
  ConvProblem c;
  c.c = c.k = 16, c.h = c.w = 8, c.kh = c.kw = 1;
  c.set_half(DType::kBF16).set_layouts(Layout::kNchw16c, Layout::kNchw16c);
  EXPECT_FALSE(find_conv_algorithm("gemm")->supports(c));
  EXPECT_FALSE(find_conv_algorithm("spatial-pack")->supports(c));
  EXPECT_TRUE(find_conv_algorithm("direct")->supports(c));
  // bf16 direct on blocks is native (vdpbf16ps) wherever the path has AVX512-BF16, with any
  // epilogue; f16 runs the widened twin.
  for (Isa isa : supported_isa_levels()) {
    if (native_blocked_layout(isa) != Layout::kNchw16c) continue;
    for (DType t : kTypes)
      for (Activation act : {Activation::kRelu, Activation::kSilu}) {
        ConvProblem q = c;
        q.set_half(t);
        q.epilogue.act = act;
        const std::vector<uint16_t> w(static_cast<size_t>(q.weight_count()), 0);
        const auto pc = find_conv_algorithm("direct")->prepare(
            q, ConvWeights::half(w.data(), nullptr),
            find_conv_algorithm("direct")->default_knobs(q, isa), isa);
        const bool native = t == DType::kBF16 && isa >= Isa::kAvx512Bf16;
        EXPECT_EQ(conv_compute_name(pc->compute()),
                  std::string(conv_compute_name(native ? ConvCompute::kNativeBf16
                                                       : ConvCompute::kEmulated)))
            << isa_name(isa) << " " << dtype_name(t);
      }
  }
}

TEST(HConvBlocked, FusedEpiloguesOnBlocks) {
  if (!isa_supported(Isa::kAvx512)) GTEST_SKIP() << "needs avx512";
  const Isa isa = detected_isa();
  ConvProblem c3;  // 3x3, channels off the block
  c3.c = 17, c3.k = 23, c3.h = 9, c3.w = 11, c3.kh = c3.kw = 3;
  c3.pad_t = c3.pad_l = c3.pad_b = c3.pad_r = 1;
  c3.has_bias = true;
  ConvProblem dw = c3;  // depthwise, blocks and a partial one
  dw.c = dw.k = dw.groups = 40;
  ConvProblem pw = c3;  // 1x1
  pw.kh = pw.kw = 1, pw.pad_t = pw.pad_l = pw.pad_b = pw.pad_r = 0, pw.c = 48, pw.k = 40;
  for (DType t : kTypes)
    for (Activation act : {Activation::kNone, Activation::kRelu, Activation::kClip,
                           Activation::kSilu, Activation::kHardSwish})
      for (bool res : {false, true})
        for (const ConvProblem& c : {c3, dw, pw})
          for (const char* name : {"direct", "depthwise"}) {
            const ConvAlgorithm* a = find_conv_algorithm(name);
            ConvProblem b = c;
            b.set_half(t).set_layouts(Layout::kNchw16c, Layout::kNchw16c);
            b.epilogue.residual = res;
            if (!a->supports(b)) continue;
            ConvTester()
                .problem(c)
                .half_type(t)
                .layouts(Layout::kNchw16c, Layout::kNchw16c)
                .activation(act, 0, act == Activation::kClip ? 6.f : 0.f)
                .residual(res)
                .threads(2)
                .test(*a, isa);
          }
}

// The native bf16 tiles on blocks at every block count and a spread of pixel counts, strides
// 1 and 2, dilation, a flat 1x1, with a residual, a fused (relu) and a stored (SiLU)
// activation, one and two threads.
TEST(HConvBlocked, NativeBf16TilesAtEveryShape) {
  if (!isa_supported(Isa::kAvx512Bf16)) GTEST_SKIP() << "needs avx512-bf16";
  const ConvAlgorithm* direct = find_conv_algorithm("direct");
  ConvProblem a;  // 3x3, channels off the block, rows off every tile width
  a.c = 40, a.k = 72, a.h = 9, a.w = 13, a.kh = a.kw = 3;
  a.pad_t = a.pad_l = a.pad_b = a.pad_r = 1;
  a.has_bias = true;
  ConvProblem s2 = a;
  s2.stride_h = s2.stride_w = 2;
  ConvProblem dil = a;
  dil.dil_h = dil.dil_w = 2, dil.pad_t = dil.pad_l = dil.pad_b = dil.pad_r = 2;
  ConvProblem flat = a;  // 1x1: one run of 117 pixels
  flat.kh = flat.kw = 1, flat.pad_t = flat.pad_l = flat.pad_b = flat.pad_r = 0;
  int tested = 0;
  for (const ConvProblem& c : {a, s2, dil, flat})
    for (int64_t nv : {1, 2, 3, 4})
      for (int64_t pw : {2, 3, 7, 24}) {
        ConvProblem q = c;
        q.set_half(DType::kBF16).set_layouts(Layout::kNchw16c, Layout::kNchw16c);
        const Activation act = tested % 4 < 2 ? Activation::kRelu : Activation::kSilu;
        q.epilogue.act = act;
        ASSERT_TRUE(hconv_detail::native_blocked_direct_applies(q, Isa::kAvx512Bf16));
        Knobs k = direct->default_knobs(q, Isa::kAvx512Bf16);
        k["nv"] = nv, k["pw"] = pw;
        if (k.count("ph")) k["ph"] = 1;
        ConvTester()
            .problem(c)
            .half_type(DType::kBF16)
            .layouts(Layout::kNchw16c, Layout::kNchw16c)
            .activation(act, 0, 0)
            .residual(tested % 2 == 0)
            .threads(1 + tested % 2)
            .test(*direct, Isa::kAvx512Bf16, k);
        ++tested;
      }
  EXPECT_EQ(tested, 64);
  // On small planes the f32 twin's default takes whole-row tiles (ph > 1), which the native
  // tiles do not run: their default is a tile along the row that fills the registers.
  ConvProblem small = a;
  small.c = small.k = 256, small.h = small.w = 4;
  small.set_half(DType::kBF16).set_layouts(Layout::kNchw16c, Layout::kNchw16c);
  const Knobs k = direct->default_knobs(small, Isa::kAvx512Bf16);
  if (k.count("ph")) EXPECT_EQ(k.at("ph"), 1);
  EXPECT_EQ(k.at("nv") * std::min<int64_t>(k.at("pw"), 4), 16) << knobs_to_string(k);
}

// Every channel-block conversion entry against the scalar one: pixel counts with every tail,
// channel counts 1..16 (rows past `channels` untouched), planes wider than the pixel run.
TEST(H16Vblock, EntriesMatchTheScalarOnes) {
  std::mt19937 rng(11);
  std::uniform_real_distribution<float> d(-3.f, 3.f);
  const size_t plane = 53;
  for (const auto& k : ukernel::h16_vblock_kernels()) {
    if (!isa_supported(k.isa)) continue;
    const auto& ref = ukernel::h16_vblock_for(k.type, Isa::kScalar);
    for (size_t pixels : {size_t{1}, size_t{15}, size_t{16}, size_t{17}, size_t{50}})
      for (size_t ch : {size_t{1}, size_t{7}, size_t{16}}) {
        std::vector<uint16_t> x(16 * plane);
        for (auto& v : x) v = k.type == DType::kF16 ? f32_to_f16(d(rng)) : f32_to_bf16(d(rng));
        std::vector<float> got(pixels * 16, -1.f), want(pixels * 16, -2.f);
        k.widen(pixels, x.data(), plane, ch, got.data());
        ref.widen(pixels, x.data(), plane, ch, want.data());
        ASSERT_EQ(std::memcmp(got.data(), want.data(), got.size() * 4), 0)
            << k.name << " widen " << pixels << "x" << ch;
        for (auto& v : want) v = d(rng) * 1000.f;
        want[0] = std::nanf("");
        std::vector<uint16_t> xg(16 * plane, 0xabcd), xw(16 * plane, 0xabcd);
        k.narrow(pixels, want.data(), ch, xg.data(), plane);
        ref.narrow(pixels, want.data(), ch, xw.data(), plane);
        for (size_t i = 1; i < xg.size(); ++i)
          ASSERT_EQ(xg[i], xw[i]) << k.name << " narrow " << pixels << "x" << ch << " at " << i;
        EXPECT_TRUE(k.type == DType::kF16 ? std::isnan(f16_to_f32(xg[0]))
                                          : std::isnan(bf16_to_f32(xg[0])));
      }
  }
}

// The native kernels' logic (exact instruction models under AVX2) inside the whole gemm
// algorithm: k-group packing, odd R padding, flushes, kc blocks, tails, two threads.
TEST(HConvNativeLogic, GemmWithModelledKernels) {
  if (!isa_supported(Isa::kAvx2)) GTEST_SKIP() << "needs avx2";
  int tested = 0;
  for (const ukernel::H16GemmUkernel& uk : h16_native_logic_ukernels())
    for (const ConvProblem& c : generated_conv_problems()) {
      const bool half = uk.compute == ConvCompute::kNativeFp16;
      struct Point {
        int64_t kc, nc, flush;
      };
      for (Point pt : {Point{256, 128, 32}, Point{64, 32, 8}, Point{128, 64, 0}}) {
        Knobs k{{"kc", pt.kc}, {"nc", pt.nc}};
        if (half) k["flush"] = pt.flush;
        ConvTester().problem(c).half_type(uk.type).threads(2).test_with(
            [&](const ConvProblem& p, const ConvWeights& w) {
              auto prepared = hconv_detail::prepare_gemm_hconv_with(p, w, k, Isa::kAvx2, uk);
              EXPECT_EQ(prepared->compute(), uk.compute);
              return prepared;
            },
            std::string(uk.name) + "(model)", k);
        ++tested;
      }
    }
  EXPECT_GT(tested, 0);
}

// The tolerance is tight enough to catch a half-accumulation defect: flushing never (flush
// 0 with one kc block) on a long reduction of same-sign values drifts beyond the f32 bound.
TEST(HConvNativeLogic, HalfAccumulationErrorIsVisible) {
  if (!isa_supported(Isa::kAvx2)) GTEST_SKIP() << "needs avx2";
  const ukernel::H16GemmUkernel* f16 = nullptr;
  for (const auto& uk : h16_native_logic_ukernels())
    if (uk.compute == ConvCompute::kNativeFp16) f16 = &uk;
  ASSERT_NE(f16, nullptr);
  ConvProblem p;
  p.c = 512, p.k = 4, p.h = 2, p.w = 2;
  p.set_half(DType::kF16);
  std::vector<uint16_t> x(512 * 4), w(512 * 4);
  for (uint16_t& v : x) v = f32_to_f16(0.3f);
  for (uint16_t& v : w) v = f32_to_f16(0.7f);
  auto run = [&](int64_t flush) {
    auto pc = hconv_detail::prepare_gemm_hconv_with(p, ConvWeights::half(w.data(), nullptr),
                                                    {{"kc", 8192}, {"nc", 32}, {"flush", flush}},
                                                    Isa::kAvx2, *f16);
    ThreadPool pool(1);
    std::vector<unsigned char> ws(pc->workspace_bytes(1) + 64);
    void* wsp = ws.data() + (64 - reinterpret_cast<uintptr_t>(ws.data()) % 64) % 64;
    std::vector<uint16_t> y(16);
    pc->run(x.data(), y.data(), nullptr, wsp, pool);
    return f16_to_f32(y[0]);
  };
  std::vector<uint16_t> want(16);
  reference_hconv(p, x.data(), ConvWeights::half(w.data(), nullptr), nullptr, want.data());
  const double exact = f16_to_f32(want[0]);
  // Every product is ~0.21; with partial sums in [64, 128) (ulp 2^-4) each add rounds down by
  // ~0.022, ~200 times: a drift of several units.
  EXPECT_GT(std::fabs(run(0) - exact), 4 * std::ldexp(exact, -11));
  EXPECT_LE(std::fabs(run(8) - exact), std::ldexp(exact, -8));
}

TEST(H16InstructionModels, Fp16FmaRoundsOnce) {
  auto h = [](float f) { return f32_to_f16(f); };
  // 1 + 2^-11 is a tie between 1 and 1 + 2^-10: nearest even is 1.
  EXPECT_EQ(f16_fma_model(h(1.f), h(std::ldexp(1.f, -11)), h(1.f)), h(1.f));
  // 1 + 3 * 2^-11: tie between 1 + 2^-10 and 1 + 2^-9 -> even (1 + 2^-9).
  EXPECT_EQ(f16_fma_model(h(3.f), h(std::ldexp(1.f, -11)), h(1.f)), h(1.f + std::ldexp(1.f, -9)));
  // Fused: (1 + 2^-10)^2 - 1 = 2^-9 + 2^-20 exactly representable as f16? 2^-9 (1 + 2^-11):
  // rounds to 2^-9 once; a separately rounded product would give 1 + 2^-9 - 1 = 2^-9 too,
  // so take a case where they differ: (1 + 2^-10)(1 - 2^-10) - 1 = -2^-20 exactly.
  EXPECT_EQ(f16_fma_model(h(1.f + std::ldexp(1.f, -10)), h(1.f - std::ldexp(1.f, -10)), h(-1.f)),
            h(-std::ldexp(1.f, -20)));
  // Just above the tie (1 + 2^-11 + 2^-21): rounds up.
  EXPECT_EQ(f16_fma_model(h(1.f + std::ldexp(1.f, -10)), h(std::ldexp(1.f, -11)), h(1.f)),
            h(1.f + std::ldexp(1.f, -10)));
  // Subnormals and overflow.
  EXPECT_EQ(f16_fma_model(h(std::ldexp(1.f, -12)), h(std::ldexp(1.f, -12)), 0),
            h(std::ldexp(1.f, -24)));
  EXPECT_EQ(f16_fma_model(h(256.f), h(256.f), 0), 0x7c00);
  EXPECT_EQ(f16_fma_model(h(1.f), h(-1.f), h(1.f)), 0);      // +0
  EXPECT_EQ(f16_fma_model(0x8000, h(1.f), 0x8000), 0x8000);  // -0 + -0
  // Random: agrees with an independent rounding of the exact value. Magnitudes in
  // [2^-6, 4] keep a * b + c exact in double (lsb >= 2^-32, value < 2^5); std::nearbyint
  // rounds to nearest even at the f16 lsb of the value's binade.
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> d(1.f / 64, 4.f);
  std::bernoulli_distribution sgn(0.5);
  auto draw = [&] { return h(sgn(rng) ? -d(rng) : d(rng)); };
  for (int i = 0; i < 20000; ++i) {
    const uint16_t a = draw(), b = draw(), c = draw();
    const double exact = static_cast<double>(f16_to_f32(a)) * f16_to_f32(b) + f16_to_f32(c);
    if (exact == 0) continue;
    int e;
    std::frexp(exact, &e);  // |exact| in [2^(e-1), 2^e): f16 lsb 2^(e-11), at least 2^-24
    const int lsb = e - 11 < -24 ? -24 : e - 11;
    const double rounded = std::ldexp(std::nearbyint(std::ldexp(exact, -lsb)), lsb);
    ASSERT_EQ(f16_fma_model(a, b, c), h(static_cast<float>(rounded))) << i;
  }
}

TEST(H16InstructionModels, Bf16DotPairs) {
  auto b = [](float f) { return f32_to_bf16(f); };
  auto pair = [&](float lo, float hi) {
    return static_cast<uint32_t>(b(lo)) | static_cast<uint32_t>(b(hi)) << 16;
  };
  EXPECT_EQ(bf16_dot_model(1.f, pair(2.f, 3.f), pair(5.f, 7.f)), 1.f + 21.f + 10.f);
  // Order: hi pair first. 1 + 2^24 (hi) then -2^24 (lo) -> 2^24 (1 lost) + -2^24 = 0... with
  // lo first it would be 1 + (-2^24) = -2^24 + 1 rounded = -2^24 (even), then + 2^24 = 0 too;
  // pick values where the order shows: acc 1, hi 2^24, lo 1: (1 + 2^24) = 2^24 (tie to even),
  // + 1 = 2^24; lo first: 1 + 1 = 2, + 2^24 = 2^24 + 2.
  EXPECT_EQ(bf16_dot_model(1.f, pair(1.f, std::ldexp(1.f, 24)), pair(1.f, 1.f)),
            std::ldexp(1.f, 24));
  // DAZ on bf16 inputs, FTZ on the result.
  const uint16_t denorm = 0x0001;
  EXPECT_EQ(bf16_dot_model(0.f, static_cast<uint32_t>(denorm), pair(std::ldexp(1.f, 100), 0.f)),
            0.f);
  EXPECT_EQ(bf16_dot_model(0.f, pair(std::ldexp(1.f, -70), 0.f), pair(std::ldexp(1.f, -70), 0.f)),
            0.f);
}

TEST(H16Vcvt, RowsMatchScalarConversions) {
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> d(-70000.f, 70000.f);
  std::vector<float> f(1000);
  for (size_t i = 0; i < f.size(); ++i)
    f[i] = i % 3 == 0 ? d(rng) : i % 3 == 1 ? d(rng) * 1e-9f : d(rng) * 1e-3f;
  f[0] = std::nanf(""), f[1] = -0.f, f[2] = 65520.f, f[3] = 65519.f;
  for (const auto& k : ukernel::h16_vcvt_kernels()) {
    if (!isa_supported(k.isa)) continue;
    for (size_t n : {size_t{0}, size_t{1}, size_t{7}, size_t{15}, size_t{17}, size_t{1000}}) {
      std::vector<uint16_t> got(n), want(n);
      k.narrow(n, f.data(), got.data());
      for (size_t i = 0; i < n; ++i)
        want[i] = k.type == DType::kF16 ? f32_to_f16(f[i]) : f32_to_bf16(f[i]);
      for (size_t i = 1; i < n; ++i) ASSERT_EQ(got[i], want[i]) << k.name << " narrow " << i;
      if (n) {
        EXPECT_TRUE(k.type == DType::kF16 ? std::isnan(f16_to_f32(got[0]))
                                          : std::isnan(bf16_to_f32(got[0])));
      }
      std::vector<float> back(n);
      k.widen(n, want.data(), back.data());
      for (size_t i = 1; i < n; ++i) {
        const float w = k.type == DType::kF16 ? f16_to_f32(want[i]) : bf16_to_f32(want[i]);
        ASSERT_EQ(std::memcmp(&back[i], &w, 4), 0) << k.name << " widen " << i;
      }
    }
  }
}

TEST(HConvBasics, ListNamesAutoAndErrors) {
  ConvProblem p;
  p.c = 32, p.k = 32, p.h = 16, p.w = 16, p.kh = p.kw = 3;
  p.pad_t = p.pad_l = p.pad_b = p.pad_r = 1;
  const std::string geometry = p.key();
  p.set_half(DType::kF16);
  // Every dense algorithm has a 16-bit implementation (the list's rows; depthwise runs
  // depthwise problems only).
  ConvProblem depthwise = p;
  depthwise.groups = depthwise.c;
  int half_rows = 0;
  for (const ConvAlgorithm* a : conv_algorithms()) {
    EXPECT_EQ(find_conv_algorithm(a->name()), a);
    half_rows += a->supports(p) || a->supports(depthwise);
  }
  EXPECT_EQ(half_rows, 5);
  EXPECT_EQ(find_conv_algorithm("nope"), nullptr);
  EXPECT_STREQ(conv_compute_name(ConvCompute::kNativeFp16), "native-fp16");
  EXPECT_STREQ(conv_compute_name(ConvCompute::kAmxBf16), "amx-bf16");
  EXPECT_EQ(p.key(), geometry + "_f16");
  p.set_half(DType::kBF16);
  EXPECT_EQ(p.key(), geometry + "_bf16");
  EXPECT_TRUE(auto_conv_algorithm(p, active_isa()).supports(p));
  ConvProblem dw = p;
  dw.groups = dw.c;
  EXPECT_EQ(auto_conv_algorithm(dw, active_isa()).name(), "depthwise");
  ConvProblem bad = p;
  bad.y_type = DType::kF32;
  EXPECT_THROW(bad.validate(), Error);
  const ConvAlgorithm& g = *find_conv_algorithm("gemm");
  std::vector<uint16_t> w(static_cast<size_t>(p.weight_count()));
  Knobs k = g.default_knobs(p, Isa::kScalar);
  k["kc"] = 3;
  EXPECT_THROW(g.prepare(p, ConvWeights::half(w.data(), nullptr), k, Isa::kScalar), Error);
  ConvProblem c1;
  c1.c = 5, c1.k = 4, c1.h = 3, c1.w = 3, c1.kh = c1.kw = 1;
  ConvProblem p1 = c1;
  p1.set_half(DType::kBF16);
  // gemm supports everything; winograd only 3x3 -> kUnsupported from prepare.
  const ConvAlgorithm& wino = *find_conv_algorithm("winograd");
  if (!wino.supports(p1)) {
    std::vector<uint16_t> w1(static_cast<size_t>(c1.weight_count()));
    EXPECT_THROW(wino.prepare(p1, ConvWeights::half(w1.data(), nullptr), {}, Isa::kScalar), Error);
  }
}

// The oracle itself against the f32 reference Conv (ConvTester's path) on widened values.
TEST(HConvBasics, ReferenceMatchesF32Conv) {
  for (DType t : kTypes)
    for (const ConvProblem& c : generated_conv_problems()) {
      ConvTester tester;
      tester.problem(c).half_type(t).residual(true).activation(Activation::kRelu);
      const ConvData k = tester.data();
      const ConvProblem p = tester.problem();
      std::vector<uint16_t> y(static_cast<size_t>(p.output_count()));
      reference_hconv(p, elements<uint16_t>(k.x),
                      ConvWeights::half(elements<uint16_t>(k.w), k.bias.data()),
                      elements<uint16_t>(k.r), y.data());
      const auto& cv = ukernel::h16_vcvt_for(t, Isa::kScalar);
      std::vector<float> xf(p.input_count()), wf(p.weight_count()), rf(y.size()), yf(y.size());
      cv.widen(xf.size(), elements<uint16_t>(k.x), xf.data());
      cv.widen(wf.size(), elements<uint16_t>(k.w), wf.data());
      cv.widen(rf.size(), elements<uint16_t>(k.r), rf.data());
      const ConvAlgorithm& direct = *find_conv_algorithm("direct");
      const ConvProblem pf = p.as_f32();
      auto pc = direct.prepare(pf, ConvWeights::f32(wf.data(), k.bias.data()),
                               direct.default_knobs(pf, Isa::kScalar), Isa::kScalar);
      ThreadPool pool(1);
      std::vector<unsigned char> ws(pc->workspace_bytes(1) + 64);
      void* wsp = ws.data() + (64 - reinterpret_cast<uintptr_t>(ws.data()) % 64) % 64;
      pc->run(xf.data(), yf.data(), rf.data(), wsp, pool);
      const double ulp = t == DType::kF16 ? std::ldexp(1.0, -10) : std::ldexp(1.0, -7);
      for (size_t i = 0; i < y.size(); ++i) {
        const double got = t == DType::kF16 ? f16_to_f32(y[i]) : bf16_to_f32(y[i]);
        ASSERT_NEAR(got, yf[i], ulp * std::fabs(yf[i]) + 1e-3 * ulp + 1e-4) << p.key() << " " << i;
      }
    }
}

}  // namespace
}  // namespace dlas::test

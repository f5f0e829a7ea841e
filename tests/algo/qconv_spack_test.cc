// The int8 `spatial-pack` and vector `direct` convs (qs8-spack kernels): every ISA level
// (real kernels where the CPU has the path; the other paths' kernels through exact
// instruction models, qs8_logic.h) x generated problems x u8/s8 in/out x relu/clip/residual
// x sampled knobs, at 2 and 1 threads, EXACTLY equal to reference_qconv. And the qs8-pack
// shuffles against their definitions. On an AVX-512 / AMX machine:
//   build/dlas_tests --gtest_filter='QConvSpack*:QS8Pack*'
#include <gtest/gtest.h>

#include <random>

#include "algo/conv/qs8_common.h"
#include "algo/conv_tester.h"
#include "algo/microkernels/qs8-pack/qs8_pack.h"
#include "algo/qs8_logic.h"
#include "dlas/hw/isa.h"

namespace dlas::test {
namespace {

using qconv_detail::BlockedMode;

// Every `every`-th type variant of every generated problem (the scalar path's lane-by-lane
// kernels are slow: it runs a third of them, keeping the CI budget).
void run_generated(const ConvAlgorithm& algo, Isa isa) {
  const int64_t every = isa == Isa::kScalar ? 3 : 1;
  uint32_t seed = 7;
  int64_t idx = 0, n = 0;
  for (const ConvProblem& c : generated_conv_problems())
    for (const QVariant& v : qconv_variants()) {
      if (n++ % every) continue;
      ConvTester t;
      t.problem(c).int8(v).seed(seed++);
      const ConvProblem p = t.problem();
      if (!algo.supports(p)) continue;
      const KnobSpace space = algo.knob_space(p, isa);
      if (!t.test_points(algo, isa, {space.point((idx++ * 7919 + 13) % space.size())})) return;
    }
}

class QConvSpack : public ::testing::TestWithParam<Isa> {};

bool spack_repeats_path_below(Isa isa) {
  return repeats_path_below(isa, [](Isa i) { return &ukernel::qs8_spack_for(i); });
}

TEST_P(QConvSpack, SpatialPackEqualsTheOracle) {
  if (!isa_supported(GetParam())) GTEST_SKIP() << isa_name(GetParam()) << " not supported here";
  if (spack_repeats_path_below(GetParam()))
    GTEST_SKIP() << isa_name(GetParam()) << " runs the int8 tiled kernels of the path below";
  run_generated(*find_conv_algorithm("spatial-pack"), GetParam());
}

TEST_P(QConvSpack, DirectEqualsTheOracle) {
  if (!isa_supported(GetParam())) GTEST_SKIP() << isa_name(GetParam()) << " not supported here";
  if (spack_repeats_path_below(GetParam()))
    GTEST_SKIP() << isa_name(GetParam()) << " runs the int8 tiled kernels of the path below";
  run_generated(*find_conv_algorithm("direct"), GetParam());
}

TEST_P(QConvSpack, ExtremeValuesDoNotOverflow) {
  const Isa isa = GetParam();
  if (!isa_supported(isa)) GTEST_SKIP() << isa_name(isa) << " not supported here";
  for (const char* name : {"spatial-pack", "direct"}) {
    const ConvAlgorithm& algo = *find_conv_algorithm(name);
    for (DType xt : {DType::kU8, DType::kS8})
      EXPECT_TRUE(ConvTester().extreme_int8(xt).threads(2).test(algo, isa));
  }
}

// Whole tiles of every knob shape (moved by the unrolled code for their shape) next to edge
// tiles (the run-time loops): 64 output channels, a 16x16 plane (whole 4- and 8-wide tiles,
// 7-wide ones with a 2-column edge), the residual gathered and the output scattered.
TEST_P(QConvSpack, WholeAndEdgeTilesOfEveryShapeEqualTheOracle) {
  const Isa isa = GetParam();
  if (!isa_supported(isa)) GTEST_SKIP() << isa_name(isa) << " not supported here";
  if (spack_repeats_path_below(isa))
    GTEST_SKIP() << isa_name(isa) << " runs the int8 tiled kernels of the path below";
  const QVariant v{DType::kU8, DType::kS8, 7, -2, Activation::kRelu, true};
  for (const char* name : {"spatial-pack", "direct"})
    for (int vc : ukernel::kQS8SpackVectors)
      for (int vh : ukernel::kQS8SpackVh)
        for (int vw : ukernel::kQS8SpackVw) {
          Knobs k{{"vc", vc}, {"vh", vh}, {"vw", vw}};
          if (std::string(name) == "spatial-pack") k["parallel"] = vh % 2;
          ConvTester t;
          t.channels(24, 64).input(16, 16).kernel(3, 3).pad(1).int8(v).threads(2).seed(
              static_cast<uint32_t>(vc * 100 + vh * 10 + vw));
          EXPECT_TRUE(t.test(*find_conv_algorithm(name), isa, k))
              << name << " vc=" << vc << " vh=" << vh << " vw=" << vw;
        }
}

INSTANTIATE_TEST_SUITE_P(Isa, QConvSpack, ::testing::ValuesIn(kAllIsas),
                         [](const ::testing::TestParamInfo<Isa>& i) {
                           return isa_test_name(i.param);
                         });

// int8 `direct` on the amx path: the AMX implicit GEMM (quad-interleaved padded planes read
// in place on the virtual grid of padded-width rows, requantized in the kernel) on shapes
// that cross every edge it has: 8, 12, 16 and 24 input channels (one shallow step),
// channels off 64 and 32 (input blocks and output panels with
// padding channels), runs that cross rows and hold dropped columns (4x4, 8x8, 5x3, 14x14
// with padding), an odd number of runs (a tile with one run), asymmetric padding, unpadded
// 1x1 (no dropped columns) and 5x5, batch 2, every int8 variant (u8/s8 in and out, zero
// points, clamps, residual). EXACTLY equal to the oracle.
TEST(QConvAmxDirect, EqualsTheOracle) {
  if (!isa_supported(Isa::kAmx)) GTEST_SKIP() << "needs AMX";
  const ConvAlgorithm* direct = find_conv_algorithm("direct");
  ASSERT_NE(direct, nullptr);
  struct Shape {
    int64_t n, c, k, h, w, kh, kw, pt, pl, pb, pr;
  };
  const Shape shapes[] = {
      {1, 64, 64, 32, 32, 3, 3, 1, 1, 1, 1}, {2, 37, 23, 9, 21, 3, 3, 0, 2, 1, 0},
      {1, 96, 40, 16, 16, 1, 1, 0, 0, 0, 0}, {1, 32, 33, 7, 19, 5, 5, 2, 2, 2, 2},
      {1, 130, 16, 3, 40, 3, 3, 1, 1, 1, 1}, {1, 40, 72, 7, 7, 1, 1, 0, 0, 0, 0},
      {1, 64, 48, 8, 8, 3, 3, 1, 1, 1, 1},   {1, 256, 40, 4, 4, 3, 3, 1, 1, 1, 1},
      {2, 33, 17, 5, 3, 3, 3, 1, 0, 1, 2},   {1, 32, 32, 14, 14, 1, 1, 1, 1, 1, 1},
      {1, 16, 40, 12, 12, 1, 1, 0, 0, 0, 0}, {1, 24, 36, 9, 9, 3, 3, 1, 1, 1, 1},
      {1, 8, 48, 10, 13, 1, 1, 0, 0, 0, 0},  {2, 12, 20, 9, 9, 3, 3, 1, 1, 1, 1}};
  // Strides (sh, sw) per shape above, then strided shapes of their own: 3x3 and 1x1 stride 2
  // (one phase used), odd padded sizes (a short last phase row and column), 5x5 stride 2.
  const int64_t strides[][2] = {{1, 1}, {2, 2}, {1, 1}, {2, 1}, {1, 2}, {1, 1}, {2, 2},
                                {2, 2}, {2, 2}, {1, 1}, {2, 2}, {2, 2}, {1, 1}, {2, 2}};
  const std::vector<QVariant> variants = qconv_variants();
  uint32_t seed = 900;
  int tested = 0;
  for (int round = 0; round < 2; ++round)
    for (size_t i = 0; i < std::size(shapes); ++i)
      for (size_t v = 0; v < variants.size(); ++v) {
        const Shape& sh = shapes[i];
        ConvProblem c;
        c.n = sh.n, c.c = sh.c, c.k = sh.k, c.h = sh.h, c.w = sh.w, c.kh = sh.kh, c.kw = sh.kw;
        if (round == 1) {
          if (strides[i][0] == 1 && strides[i][1] == 1) continue;
          c.stride_h = strides[i][0], c.stride_w = strides[i][1];
        }
        c.pad_t = sh.pt, c.pad_l = sh.pl, c.pad_b = sh.pb, c.pad_r = sh.pr;
        c.has_bias = true;
        ConvTester t;
        t.problem(c).int8(variants[v]).seed(seed++).threads(2);
        ASSERT_TRUE(qconv_detail::amx_direct_applies(t.problem(), Isa::kAmx)) << t.problem().key();
        const int64_t order = static_cast<int64_t>(v % 2);
        EXPECT_TRUE(t.test(*direct, Isa::kAmx, Knobs{{"order", order}, {"group", order ? 1 : 4}}));
        ++tested;
      }
  EXPECT_EQ(tested, static_cast<int>(23 * variants.size()));
  for (DType xt : {DType::kU8, DType::kS8}) {
    ConvTester t;
    t.extreme_int8(xt).threads(2);
    if (qconv_detail::amx_direct_applies(t.problem(), Isa::kAmx))
      EXPECT_TRUE(t.test(*direct, Isa::kAmx));
  }
}

// The kernel sets of the other paths (emulated) through both algorithms, every emulated
// tile shape, both parallel splits.
TEST(QConvSpackLogic, EmulatedKernelsEqualTheOracle) {
  if (!isa_supported(Isa::kAvx2)) GTEST_SKIP() << "the emulations are built for AVX2";
  ASSERT_EQ(qs8_logic_spack_ukernels().size(), 3u);  // avx2-vnni, avx512, avx512-vnni
  uint32_t seed = 300;
  for (const ukernel::QS8SpackUkernels& set : qs8_logic_spack_ukernels()) {
    SCOPED_TRACE(set.name);
    int64_t idx = 0;
    for (const ConvProblem& c : generated_conv_problems())
      for (const QVariant& v : qconv_variants()) {
        if (idx++ % 3) continue;  // a third of the variants per set keeps this test short
        ConvTester t;
        t.problem(c).int8(v).seed(seed++).threads(2);
        const int64_t i = idx / 3;  // 0, 1, 2, ... over the variants run
        const SpackShape& s = qs8_logic_spack_shapes()[i % qs8_logic_spack_shapes().size()];
        const BlockedMode mode = i % 2 ? BlockedMode::kTiles : BlockedMode::kImage;
        Knobs k = {{"vc", s.vectors}, {"vh", s.vh}, {"vw", s.vw}};
        if (mode == BlockedMode::kTiles) k["parallel"] = i / 2 % 2;
        if (!t.test_with(
                [&](const ConvProblem& p, const ConvWeights& w) {
                  return qconv_detail::prepare_blocked_qconv(p, w, k, set, mode);
                },
                std::string(set.name) + (mode == BlockedMode::kTiles ? " spatial-pack" : " direct"),
                k))
          return;
      }
    for (DType xt : {DType::kU8, DType::kS8}) {
      const Knobs k = {{"vc", 2}, {"vh", 2}, {"vw", 7}, {"parallel", 1}};
      EXPECT_TRUE(ConvTester().extreme_int8(xt).threads(2).test_with(
          [&](const ConvProblem& p, const ConvWeights& w) {
            return qconv_detail::prepare_blocked_qconv(p, w, k, set, BlockedMode::kTiles);
          },
          std::string(set.name) + " extreme", k));
    }
  }
}

// Every real set has every knob shape; the emulated list covers every set above AVX2.
TEST(QConvSpackLogic, KernelSetsCoverTheKnobShapes) {
  int above_avx2 = 0;
  for (const ukernel::QS8SpackUkernels& set : ukernel::qs8_spack_ukernels()) {
    above_avx2 += set.isa > Isa::kAvx2;
    for (int v : ukernel::kQS8SpackVectors)
      for (int vh : ukernel::kQS8SpackVh)
        for (int vw : ukernel::kQS8SpackVw)
          EXPECT_NE(set.select(v, vh, vw), nullptr) << set.name << " " << v << vh << vw;
  }
  EXPECT_EQ(above_avx2, static_cast<int>(qs8_logic_spack_ukernels().size()));
  // amx runs the avx512-vnni set (no AMX kernel of its own).
  EXPECT_EQ(ukernel::qs8_spack_for(Isa::kAmx).isa, isa_supported(Isa::kAvx512Vnni)
                                                       ? Isa::kAvx512Vnni
                                                       : ukernel::qs8_spack_for(Isa::kAvx512).isa);
}

// The auto rule (conv_algorithms.cc): direct on stride-1 KxK convs, spatial-pack on strided
// ones and on 1x1 convs of small planes on 16 lanes, gemm on other 1x1, few-channel stems
// and the AMX path.
TEST(QConvSpackAuto, RulePicksByShapeAndPath) {
  auto pick = [](const char* key, Isa isa) {
    const ConvProblem p =
        ConvTester().problem(ConvProblem::from_key(key)).int8(qconv_variants().front()).problem();
    return std::string(auto_conv_algorithm(p, isa).name());
  };
  const char* r18_l1 = "c64_h32_w32_k64_3x3_s1x1_p1x1x1x1_d1x1_g1";
  EXPECT_EQ(pick(r18_l1, Isa::kAvx2), "direct");
  EXPECT_EQ(pick("c256_h8_w8_k256_3x3_s1x1_p1x1x1x1_d1x1_g1", Isa::kAvx2), "direct");
  EXPECT_EQ(pick("c64_h32_w32_k128_3x3_s2x2_p1x1x1x1_d1x1_g1", Isa::kAvx512Vnni), "spatial-pack");
  EXPECT_EQ(pick("c64_h32_w32_k128_1x1_s2x2_p0x0x0x0_d1x1_g1", Isa::kAvx2), "gemm");
  EXPECT_EQ(pick("c3_h32_w32_k64_3x3_s1x1_p1x1x1x1_d1x1_g1", Isa::kAvx2), "gemm");
  EXPECT_EQ(pick(r18_l1, Isa::kAmx), "direct");
  // The AMX implicit GEMM takes 1x1 and strided convs too, where the CPU has AMX.
  const bool amx = isa_supported(Isa::kAmx);
  EXPECT_EQ(pick("c64_h32_w32_k128_1x1_s2x2_p0x0x0x0_d1x1_g1", Isa::kAmx), amx ? "direct" : "gemm");
  EXPECT_EQ(pick("c256_h56_w56_k64_1x1_s1x1_p0x0x0x0_d1x1_g1", Isa::kAmx), amx ? "direct" : "gemm");
  EXPECT_EQ(pick("c3_h32_w32_k64_3x3_s1x1_p1x1x1x1_d1x1_g1", Isa::kAmx), "gemm");
  // From 8 input channels (a channel-pruned layer) the tiles take it; a stem stays on gemm.
  EXPECT_EQ(pick("c8_h28_w28_k16_3x3_s1x1_p1x1x1x1_d1x1_g1", Isa::kAmx), amx ? "direct" : "gemm");
  EXPECT_EQ(pick("c8_h56_w56_k48_1x1_s1x1_p0x0x0x0_d1x1_g1", Isa::kAmx), amx ? "direct" : "gemm");
  EXPECT_EQ(pick("c16_h8_w8_k16_3x3_s1x1_p1x1x1x1_d1x1_g16", Isa::kAvx2), "depthwise");
  // 1x1 convs on planes of at most 16 pixels take spatial-pack on the 16-lane paths off AMX
  // (gemm's pixel lanes would sit idle), strided ones too; from 8x8 up, and on AVX2, gemm.
  for (Isa isa : {Isa::kAvx512, Isa::kAvx512Vnni, Isa::kAvx512Bf16}) {
    EXPECT_EQ(pick("c512_h4_w4_k512_1x1_s1x1_p0x0x0x0_d1x1_g1", isa), "spatial-pack");
    EXPECT_EQ(pick("c1024_h2_w2_k1024_1x1_s1x1_p0x0x0x0_d1x1_g1", isa), "spatial-pack");
    EXPECT_EQ(pick("c256_h8_w8_k512_1x1_s2x2_p0x0x0x0_d1x1_g1", isa), "spatial-pack");
    EXPECT_EQ(pick("c256_h8_w8_k256_1x1_s1x1_p0x0x0x0_d1x1_g1", isa), "gemm");
  }
  EXPECT_EQ(pick("c512_h4_w4_k512_1x1_s1x1_p0x0x0x0_d1x1_g1", Isa::kAvx2), "gemm");
}

// The packing shuffles of every set this CPU runs against their definitions (qs8_pack.h),
// at lengths around the 16- and 64-byte vector steps, both flips, strides 1-3.
TEST(QS8Pack, ShufflesMatchTheirDefinitions) {
  size_t count = 0;
  const ukernel::QS8PackUkernels* sets = ukernel::qs8_pack_all(&count);
  ASSERT_GE(count, 2u);
  std::mt19937 rng(3);
  constexpr size_t kRow = 200;
  std::vector<uint8_t> src(4 * kRow);
  for (auto& b : src) b = static_cast<uint8_t>(rng());
  const uint8_t* rows[4] = {src.data(), src.data() + kRow, src.data() + 2 * kRow,
                            src.data() + 3 * kRow};
  for (size_t s = 0; s < count; ++s) {
    const ukernel::QS8PackUkernels& set = sets[s];
    if (!isa_supported(set.isa)) continue;
    for (size_t n : {0, 1, 7, 14, 15, 16, 17, 33, 48, 50, 63, 64, 65, 130, 200})
      for (uint8_t flip : {0, 0x80}) {
        std::vector<uint8_t> got(4 * n + 8, 0xEE), want(4 * n + 8, 0xEE);
        for (size_t j = 0; j < n; ++j)
          for (int e = 0; e < 4; ++e) want[4 * j + e] = rows[e][j] ^ flip;
        set.quads(rows, n, flip, got.data());
        EXPECT_EQ(got, want) << set.name << " quads n=" << n;
        std::fill(want.begin(), want.end(), 0xEE), std::fill(got.begin(), got.end(), 0xEE);
        for (size_t j = 0; j < n; ++j)
          for (int e = 0; e < 2; ++e)
            want[4 * j + 2 * e] = rows[e][j] ^ flip, want[4 * j + 2 * e + 1] = 0;
        set.pairs(rows, n, flip, got.data());
        EXPECT_EQ(got, want) << set.name << " pairs n=" << n;
        for (size_t stride : {1, 2, 3}) {
          if (n * stride > src.size()) continue;
          std::vector<uint8_t> g(n + 8, 0xEE), w(n + 8, 0xEE);
          for (size_t j = 0; j < n; ++j) w[j] = src[j * stride] ^ flip;
          set.copy(src.data(), stride, n, flip, g.data());
          EXPECT_EQ(g, w) << set.name << " copy n=" << n << " stride=" << stride;
        }
      }
  }
}

}  // namespace
}  // namespace dlas::test

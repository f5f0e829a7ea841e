// Spatial-pack convolution and its tile kernels against the reference Conv.
#include <gtest/gtest.h>

#include <random>

#include "algo/conv_tester.h"
#include "algo/microkernels/f32-spack/f32_spack.h"
#include "dlas/core/error.h"

namespace dlas {
const ConvAlgorithm& spatial_pack_conv_algorithm();
}

namespace dlas::test {
namespace {

const ConvAlgorithm& algo() { return spatial_pack_conv_algorithm(); }

TEST(SpatialPackConv, SupportsEveryGeneratedProblem) {
  for (const ConvProblem& p : generated_conv_problems()) EXPECT_TRUE(algo().supports(p)) << p.key();
}

TEST(SpatialPackConv, RejectsBadKnobs) {
  const ConvProblem p = generated_conv_problems()[0];
  std::vector<float> w(static_cast<size_t>(p.weight_count()));
  Knobs k = algo().default_knobs(p, Isa::kScalar);
  k["vw"] = 5;
  EXPECT_THROW(algo().prepare(p, ConvWeights::f32(w.data(), nullptr), k, Isa::kScalar), Error);
  k = algo().default_knobs(p, Isa::kScalar);
  k.erase("vh");
  EXPECT_THROW(algo().prepare(p, ConvWeights::f32(w.data(), nullptr), k, Isa::kScalar), Error);
}

TEST(SpatialPackConv, DefaultKnobsEveryIsa) {
  for (Isa isa : supported_isas())
    for (const ConvProblem& p : generated_conv_problems())
      ConvTester().problem(p).test(algo(), isa);
}

TEST(SpatialPackConv, SampledKnobPoints) {
  for (Isa isa : supported_isas())
    for (const ConvProblem& p : generated_conv_problems()) {
      const KnobSpace space = algo().knob_space(p, isa);
      for (int64_t i = 0; i < space.size(); i += 5)
        ConvTester().problem(p).test(algo(), isa, space.point(i));
    }
}

TEST(SpatialPackConv, EveryTileShapeTwoThreadsBothAxes) {
  // Stride 2 (stride-resolved columns) and dilation 2 (raw halo columns).
  for (const ConvProblem& p : {generated_conv_problems()[3], generated_conv_problems()[9]})
    for (Isa isa : supported_isas()) {
      const KnobSpace space = algo().knob_space(p, isa);
      for (int64_t i = 0; i < space.size(); ++i)
        ConvTester().problem(p).threads(2).test(algo(), isa, space.point(i));
    }
}

TEST(SpatialPackConv, Epilogues) {
  ConvProblem base = generated_conv_problems()[2];  // 17 -> 23, 8x8
  for (Isa isa : supported_isas())
    for (bool res : {false, true}) {
      ConvTester t;
      t.problem(base).residual(res);
      t.activation(Activation::kNone).test(algo(), isa);
      t.activation(Activation::kRelu).test(algo(), isa);
      t.activation(Activation::kClip, 0.f, 6.f).test(algo(), isa);
      t.activation(Activation::kSilu).test(algo(), isa);
      t.activation(Activation::kHardSwish).test(algo(), isa);
      t.activation(Activation::kSigmoid).test(algo(), isa);
      t.activation(Activation::kHardSigmoid, 0.2f, 0.5f).threads(2).test(algo(), isa);
    }
}

// Every kernel set the CPU runs, every tile shape, against a plain loop over the
// documented contract (f32_spack.h).
TEST(F32SpackUkernels, EveryShapeMatchesContract) {
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> dist(-1.f, 1.f);
  int tested = 0;
  for (const auto* list :
       {&ukernel::f32_spack_ukernels(), &ukernel::f32_spack_test_only_ukernels()})
    for (const auto& set : *list) {
      if (!isa_supported(set.isa)) continue;
      for (int nv : ukernel::kSpackVectors)
        for (int vh : ukernel::kSpackVh)
          for (int vw : ukernel::kSpackVw) {
            const auto fn = set.select(nv, vh, vw);
            ASSERT_NE(fn, nullptr) << set.name;
            const size_t kc = 3, kh = 2, kw = 3, vc = static_cast<size_t>(nv * set.lanes);
            const size_t rows = static_cast<size_t>(vh) * 2 + kh;  // stride 2, dilation 1
            const size_t rs = 2 * kw * vw, khs = kw * vw, cs = rows * kw * vw + 5;
            std::vector<float> x(kc * cs), w(kc * kh * kw * vc), out(vh * vw * vc);
            for (float& v : x) v = dist(rng);
            for (float& v : w) v = dist(rng);
            const size_t kws = nv == 1 ? 1 : vw;  // raw halo columns / stride-resolved columns
            fn(kc, kh, kw, x.data(), cs, rs, khs, kws, w.data(), out.data());
            for (int p = 0; p < vh * vw; ++p)
              for (size_t v = 0; v < vc; ++v) {
                double want = 0, mag = 0;
                const int ph = p / vw, pw = p % vw;
                for (size_t ci = 0; ci < kc; ++ci)
                  for (size_t a = 0; a < kh; ++a)
                    for (size_t b = 0; b < kw; ++b) {
                      const double xv = x[ci * cs + a * khs + b * kws + ph * rs + pw];
                      const double wv = w[((ci * kh + a) * kw + b) * vc + v];
                      want += xv * wv, mag += std::fabs(xv * wv);
                    }
                ASSERT_NEAR(out[p * vc + v], want, 1e-6 * mag + 1e-7)
                    << set.name << " nv=" << nv << " vh=" << vh << " vw=" << vw;
              }
            ++tested;
          }
    }
  EXPECT_GE(tested, 18);
}

}  // namespace
}  // namespace dlas::test

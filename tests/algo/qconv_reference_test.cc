// The int8 oracle (reference_qconv) against its definition computed independently in
// double precision on the dequantized values, and the quantized-domain clamps.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "dlas/algo/qconv.h"
#include "dlas/core/error.h"
#include "dlas/hw/thread_pool.h"

namespace dlas {
namespace {

ConvProblem small_problem(bool residual, Activation act) {
  ConvProblem p;
  p.n = 2;
  p.c = 6;
  p.h = 7;
  p.w = 5;
  p.k = 4;
  p.kh = p.kw = 3;
  p.pad_t = p.pad_l = p.pad_b = p.pad_r = 1;
  p.groups = 2;
  p.has_bias = true;
  p.epilogue.act = act;
  p.epilogue.p0 = 0.f;
  p.epilogue.p1 = 6.f;
  p.epilogue.residual = residual;
  p.set_int8({0.05f, 17, DType::kU8}, {0.11f, 120, DType::kU8}, {0.07f, -3, DType::kS8});
  return p;
}

TEST(QConvReference, MatchesDequantizedDoubleMathWithinOneStep) {
  for (bool residual : {false, true})
    for (Activation act : {Activation::kNone, Activation::kRelu, Activation::kClip}) {
      const ConvProblem p = small_problem(residual, act);
      const ConvProblem& c = p;
      std::mt19937 rng(7);
      std::vector<uint8_t> x(c.n * c.c * c.h * c.w);
      std::vector<int8_t> w(c.weight_count());
      std::vector<int8_t> r(c.n * c.k * c.oh() * c.ow());
      std::vector<float> ws(c.k);
      std::vector<int32_t> bias(c.k);
      for (auto& v : x) v = static_cast<uint8_t>(rng() % 256);
      for (auto& v : w) v = static_cast<int8_t>(static_cast<int>(rng() % 255) - 127);
      for (auto& v : r) v = static_cast<int8_t>(static_cast<int>(rng() % 256) - 128);
      for (int64_t k = 0; k < c.k; ++k) {
        ws[k] = 0.002f * static_cast<float>(k + 1);
        bias[k] = static_cast<int32_t>(rng() % 2001) - 1000;
      }
      std::vector<uint8_t> y(r.size());
      reference_qconv(p, x.data(), ConvWeights::int8(w.data(), ws.data(), bias.data()), r.data(),
                      y.data());
      const int64_t cg = c.c_per_group(), kg = c.k_per_group();
      int64_t exact = 0;
      for (int64_t n = 0; n < c.n; ++n)
        for (int64_t k = 0; k < c.k; ++k)
          for (int64_t oy = 0; oy < c.oh(); ++oy)
            for (int64_t ox = 0; ox < c.ow(); ++ox) {
              double acc = static_cast<double>(bias[k]) * p.quant.x.scale * ws[k];
              for (int64_t ci = 0; ci < cg; ++ci)
                for (int64_t ky = 0; ky < 3; ++ky)
                  for (int64_t kx = 0; kx < 3; ++kx) {
                    const int64_t iy = oy - 1 + ky, ix = ox - 1 + kx;
                    if (iy < 0 || iy >= c.h || ix < 0 || ix >= c.w) continue;
                    const int64_t cin = (k / kg) * cg + ci;
                    acc += p.quant.x.scale * (x[((n * c.c + cin) * c.h + iy) * c.w + ix] - 17.0) *
                           ws[k] * w[((k * cg + ci) * 3 + ky) * 3 + kx];
                  }
              const int64_t yi = ((n * c.k + k) * c.oh() + oy) * c.ow() + ox;
              if (residual) acc += p.quant.r.scale * (r[yi] + 3.0);
              if (act == Activation::kRelu) acc = std::max(acc, 0.0);
              if (act == Activation::kClip) acc = std::min(std::max(acc, 0.0), 6.0);
              const double q = std::min(255.0, std::max(0.0, std::nearbyint(acc / 0.11) + 120));
              EXPECT_NEAR(y[yi], q, 1.0) << p.key() << " at " << yi;
              exact += y[yi] == q;
            }
      // Off-by-one only at rounding ties of the float multiplier: rare.
      EXPECT_GT(exact, static_cast<int64_t>(y.size() * 95 / 100)) << p.key();
    }
}

TEST(QConvReference, ClampBoundsAreInTheQuantizedDomain) {
  ConvProblem p = small_problem(false, Activation::kRelu);
  EXPECT_EQ(p.out_lo(), 120);
  EXPECT_EQ(p.out_hi(), 255);
  p.epilogue.act = Activation::kClip;  // 0..6 at scale 0.11: 6 / 0.11 = 54.5 -> 55
  EXPECT_EQ(p.out_lo(), 120);
  EXPECT_EQ(p.out_hi(), 175);
  p.set_int8(p.quant.x, {0.01f, -100, DType::kS8},
             p.quant.r);  // 6 / 0.01 = 600: the type's bound wins
  EXPECT_EQ(p.out_lo(), -100);
  EXPECT_EQ(p.out_hi(), 127);
  p.epilogue.act = Activation::kSilu;
  EXPECT_THROW(p.validate(), Error);
  p.epilogue.act = Activation::kNone;
  p.quant.y.zero_point = 300;
  EXPECT_THROW(p.validate(), Error);
}

TEST(QConvReference, DirectAlgorithmOnTheScalarPathEqualsTheOracleBitForBit) {
  const ConvProblem p = small_problem(true, Activation::kClip);
  const ConvProblem& c = p;
  std::mt19937 rng(11);
  std::vector<uint8_t> x(c.n * c.c * c.h * c.w);
  std::vector<int8_t> w(c.weight_count()), r(c.n * c.k * c.oh() * c.ow());
  for (auto& v : x) v = static_cast<uint8_t>(rng());
  for (auto& v : w) v = static_cast<int8_t>(rng());
  for (auto& v : r) v = static_cast<int8_t>(rng());
  const std::vector<float> ws = {0.01f, 0.003f, 0.02f, 0.007f};
  const std::vector<int32_t> bias = {5, -900, 0, 77};
  std::vector<uint8_t> want(r.size()), got(r.size(), 0);
  reference_qconv(p, x.data(), ConvWeights::int8(w.data(), ws.data(), bias.data()), r.data(),
                  want.data());
  const ConvAlgorithm* algo = find_conv_algorithm("direct");
  ASSERT_NE(algo, nullptr);
  auto prepared = algo->prepare(p, ConvWeights::int8(w.data(), ws.data(), bias.data()),
                                algo->default_knobs(p, Isa::kScalar), Isa::kScalar);
  ThreadPool pool(2);
  std::vector<uint8_t> workspace(prepared->workspace_bytes(2));
  prepared->run(x.data(), got.data(), r.data(), workspace.data(), pool);
  EXPECT_EQ(got, want);
}

}  // namespace
}  // namespace dlas

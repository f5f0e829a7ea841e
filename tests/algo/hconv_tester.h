// HConvTester: one 16-bit conv problem through an ConvAlgorithm (or a prepared conv) on one
// ISA path and knob point, checked against reference_hconv. Inputs are uniform in [-1, 1]
// rounded to the type, so the oracle sees exactly what the kernels see.
//
// Tolerance per output, derived (mag = sum_r |w_r x_r| in double, R = reduction length):
//   accumulation error E = 4 eps32 sqrt(R) (mag + 2)  (f32 accumulators, as ConvTester)
//                        + flush_steps * 2^-11 * mag + R * 2^-25   (half accumulators: each
//                          of <= N sequential half FMAs between flushes rounds by <= 2^-11
//                          of a partial sum bounded by the chunk's magnitude, subnormals by
//                          half their 2^-24 lsb)
//   |got - want| <= lip * E + ulp_T(|want|) + tiny    (both round once to T: half an ulp
//                          each; lip bounds the activation's slope: 1.5 for hard-swish,
//                          1.1 for SiLU, |alpha| for hard-sigmoid, else 1)
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "dlas/algo/hconv.h"
#include "dlas/hw/thread_pool.h"

namespace dlas::test {

struct HConvCase {
  std::vector<uint16_t> x, w, res;
  std::vector<float> b;
};

class HConvTester {
 public:
  // The shapes and epilogue of p, in the tester's 16-bit type.
  HConvTester& problem(const ConvProblem& p) {
    const DType t = p_.w_type;
    p_ = p;
    p_.set_half(t);
    return *this;
  }
  HConvTester& type(DType t) {
    p_.set_half(t);
    return *this;
  }
  HConvTester& activation(Activation a, float p0 = 0.f, float p1 = 0.f) {
    p_.epilogue.act = a;
    p_.epilogue.p0 = p0;
    p_.epilogue.p1 = p1;
    return *this;
  }
  HConvTester& residual(bool r) {
    p_.epilogue.residual = r;
    return *this;
  }
  HConvTester& threads(int t) {
    threads_ = t;
    return *this;
  }
  // Reduction steps accumulated in half precision (0: f32 accumulation).
  HConvTester& half_steps(int64_t n) {
    half_steps_ = n;
    return *this;
  }
  const ConvProblem& problem() const { return p_; }

  HConvCase make_case() const {
    const ConvProblem& c = p_;
    std::mt19937 rng(seed_);
    std::uniform_real_distribution<float> dist(-1.f, 1.f);
    auto gen = [&](size_t n) {
      std::vector<uint16_t> v(n);
      for (uint16_t& h : v)
        h = p_.w_type == DType::kF16 ? f32_to_f16(dist(rng)) : f32_to_bf16(dist(rng));
      return v;
    };
    HConvCase k;
    k.x = gen(static_cast<size_t>(c.n * c.c * c.h * c.w));
    k.w = gen(static_cast<size_t>(c.weight_count()));
    k.res = gen(static_cast<size_t>(c.n * c.k * c.oh() * c.ow()));
    k.b.resize(static_cast<size_t>(c.k));
    for (float& v : k.b) v = dist(rng);
    return k;
  }

  // Runs `algo` at `knobs` (its default point when empty) on `isa`.
  bool test(const ConvAlgorithm& algo, Isa isa, Knobs knobs = {}) const {
    if (knobs.empty()) knobs = algo.default_knobs(p_, isa);
    const HConvCase k = make_case();
    auto prepared = algo.prepare(
        p_, ConvWeights::half(k.w.data(), p_.has_bias ? k.b.data() : nullptr), knobs, isa);
    int64_t steps = half_steps_;
    if (prepared->compute() == ConvCompute::kNativeFp16) {
      const int64_t f = knobs.count("flush") ? knobs.at("flush") : 0;
      const int64_t kc = knobs.count("kc") ? knobs.at("kc") : 0;
      steps = f > 0 ? f : kc;
    }
    return check(*prepared, k,
                 std::string(algo.name()) + " " + isa_name(isa) + " " +
                     conv_compute_name(prepared->compute()) + " knobs=" + knobs_to_string(knobs),
                 steps);
  }

  // Runs an already prepared conv of problem() on case k.
  bool check(const PreparedConv& prepared, const HConvCase& k, const std::string& label,
             int64_t half_steps) const {
    const ConvProblem& c = p_;
    const std::string what = label + " " + p_.key() + " act=" + activation_name(c.epilogue.act) +
                             (c.epilogue.residual ? " +res" : "") +
                             " threads=" + std::to_string(threads_);
    const uint16_t* res = c.epilogue.residual ? k.res.data() : nullptr;
    std::vector<uint16_t> want(k.res.size()), got(k.res.size(), 0x7e00);
    reference_hconv(p_, k.x.data(),
                    ConvWeights::half(k.w.data(), c.has_bias ? k.b.data() : nullptr), res,
                    want.data());
    ThreadPool pool(threads_);
    std::vector<unsigned char> ws(prepared.workspace_bytes(threads_) + 64);
    void* wsp = ws.data() + (64 - reinterpret_cast<uintptr_t>(ws.data()) % 64) % 64;
    prepared.run(k.x.data(), got.data(), res, wsp, pool);

    const bool f16 = p_.w_type == DType::kF16;
    auto widen = [f16](uint16_t v) { return f16 ? f16_to_f32(v) : bf16_to_f32(v); };
    const double ulp = f16 ? std::ldexp(1.0, -10) : std::ldexp(1.0, -7);
    const double tiny = f16 ? std::ldexp(1.0, -24) : 1e-38;
    const double r = static_cast<double>(c.c_per_group() * c.kh * c.kw);
    const double eps = std::ldexp(1.0, -23);
    double lip = 1.0;
    if (c.epilogue.act == Activation::kHardSwish) lip = 1.5;
    if (c.epilogue.act == Activation::kSilu) lip = 1.1;
    if (c.epilogue.act == Activation::kHardSigmoid)
      lip = std::max(1.0, std::fabs(static_cast<double>(c.epilogue.p0)));
    const double nsteps =
        static_cast<double>(std::min<int64_t>(half_steps, c.c_per_group() * c.kh * c.kw));
    const int64_t oh = c.oh(), ow = c.ow(), cg = c.c_per_group(), kg = c.k_per_group();
    int64_t bad = 0;
    for (int64_t n = 0; n < c.n; ++n)
      for (int64_t kk = 0; kk < c.k; ++kk)
        for (int64_t oy = 0; oy < oh; ++oy)
          for (int64_t ox = 0; ox < ow; ++ox) {
            double mag = 0;
            const int64_t g = kk / kg;
            for (int64_t ci = 0; ci < cg; ++ci)
              for (int64_t ky = 0; ky < c.kh; ++ky)
                for (int64_t kx = 0; kx < c.kw; ++kx) {
                  const int64_t iy = oy * c.stride_h - c.pad_t + ky * c.dil_h;
                  const int64_t ix = ox * c.stride_w - c.pad_l + kx * c.dil_w;
                  if (iy < 0 || iy >= c.h || ix < 0 || ix >= c.w) continue;
                  mag += std::fabs(static_cast<double>(
                             widen(k.x[((n * c.c + g * cg + ci) * c.h + iy) * c.w + ix]))) *
                         std::fabs(static_cast<double>(
                             widen(k.w[((kk * cg + ci) * c.kh + ky) * c.kw + kx])));
                }
            const size_t i = static_cast<size_t>(((n * c.k + kk) * oh + oy) * ow + ox);
            const double e = 4 * eps * std::sqrt(r) * (mag + 2) + 1e-6 +
                             nsteps * std::ldexp(1.0, -11) * mag + r * std::ldexp(1.0, -25);
            const double wv = widen(want[i]), gv = widen(got[i]);
            const double tol = lip * e * (1 + ulp) + ulp * std::fabs(wv) + tiny;
            if (!(std::fabs(gv - wv) <= tol) && bad++ < 5)
              ADD_FAILURE() << what << ": output " << i << " got " << gv << " want " << wv
                            << " tol " << tol;
          }
    if (bad) ADD_FAILURE() << what << ": " << bad << " of " << got.size() << " outputs differ";
    return bad == 0;
  }

 private:
  ConvProblem p_ = ConvProblem().set_half(DType::kF16);
  int threads_ = 1;
  int64_t half_steps_ = 0;
  uint32_t seed_ = 7;
};

}  // namespace dlas::test

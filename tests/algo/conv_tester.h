// ConvTester: a fluent tester (XNNPACK's GemmMicrokernelTester style) that runs one
// ConvProblem through a conv algorithm on one ISA and knob point, and compares it with
// the reference Conv kernel followed by the scalar epilogue. The tolerance is derived
// from the reduction length: |got - want| <= 4 * eps * sqrt(R) * sum_r |w_r x_r| + 1e-6
// per output, where R = C/g * KH * KW and the sum is computed exactly in double.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "algo/microkernels/f32-vepilogue/f32_vepilogue.h"
#include "algo/op_test_util.h"
#include "dlas/algo/conv.h"
#include "dlas/hw/thread_pool.h"

namespace dlas::test {

class ConvTester {
 public:
  ConvTester& batch(int64_t n) {
    p_.n = n;
    return *this;
  }
  ConvTester& channels(int64_t c, int64_t k) {
    p_.c = c;
    p_.k = k;
    return *this;
  }
  ConvTester& input(int64_t h, int64_t w) {
    p_.h = h;
    p_.w = w;
    return *this;
  }
  ConvTester& kernel(int64_t kh, int64_t kw) {
    p_.kh = kh;
    p_.kw = kw;
    return *this;
  }
  ConvTester& stride(int64_t s) {
    p_.stride_h = p_.stride_w = s;
    return *this;
  }
  ConvTester& stride(int64_t sh, int64_t sw) {
    p_.stride_h = sh;
    p_.stride_w = sw;
    return *this;
  }
  ConvTester& pad(int64_t p) {
    p_.pad_t = p_.pad_l = p_.pad_b = p_.pad_r = p;
    return *this;
  }
  ConvTester& pad(int64_t t, int64_t l, int64_t b, int64_t r) {
    p_.pad_t = t;
    p_.pad_l = l;
    p_.pad_b = b;
    p_.pad_r = r;
    return *this;
  }
  ConvTester& dilation(int64_t d) {
    p_.dil_h = p_.dil_w = d;
    return *this;
  }
  ConvTester& groups(int64_t g) {
    p_.groups = g;
    return *this;
  }
  ConvTester& bias(bool b) {
    p_.has_bias = b;
    return *this;
  }
  ConvTester& activation(Activation a, float p0 = 0.f, float p1 = 0.f) {
    p_.epilogue.act = a;
    p_.epilogue.p0 = p0;
    p_.epilogue.p1 = p1;
    return *this;
  }
  ConvTester& residual(bool r) {
    p_.epilogue.residual = r;
    return *this;
  }
  ConvTester& threads(int t) {
    threads_ = t;
    return *this;
  }
  // Zeroes each weight with probability s (sparse algorithms; 1 = all-zero weights).
  ConvTester& weight_sparsity(double s) {
    sparsity_ = s;
    return *this;
  }
  // Then also zeroes weight (k, r) where keep(k, r) is false (k output channel, r =
  // (c/g, ky, kx) reduction index): structured masks (blocks, empty rows, one nonzero).
  ConvTester& weight_mask(std::function<bool(int64_t k, int64_t r)> keep) {
    keep_ = std::move(keep);
    return *this;
  }
  ConvTester& seed(uint32_t s) {
    seed_ = s;
    return *this;
  }
  ConvTester& problem(const ConvProblem& p) {
    p_ = p;
    return *this;
  }
  const ConvProblem& problem() const { return p_; }

  // Runs `algo` with `knobs` (its default point when empty) on `isa` and checks every
  // output. Returns false (after ADD_FAILURE) on a mismatch.
  bool test(const ConvAlgorithm& algo, Isa isa, Knobs knobs = {}) const {
    p_.validate();
    if (knobs.empty()) knobs = algo.default_knobs(p_, isa);
    const std::string what = std::string(algo.name()) + " " + isa_name(isa) + " " + p_.key() +
                             " act=" + activation_name(p_.epilogue.act) +
                             (p_.epilogue.residual ? " +res" : "") +
                             " knobs=" + knobs_to_string(knobs);
    std::mt19937 rng(seed_);
    std::uniform_real_distribution<float> dist(-1.f, 1.f);
    auto fill = [&](std::vector<float>& v) {
      for (float& x : v) x = dist(rng);
    };
    const int64_t cg = p_.c_per_group(), oh = p_.oh(), ow = p_.ow();
    std::vector<float> x(static_cast<size_t>(p_.n * p_.c * p_.h * p_.w));
    std::vector<float> w(static_cast<size_t>(p_.weight_count()));
    std::vector<float> b(static_cast<size_t>(p_.k));
    std::vector<float> res(static_cast<size_t>(p_.n * p_.k * oh * ow));
    fill(x), fill(w), fill(b), fill(res);
    if (sparsity_ > 0) {
      std::bernoulli_distribution zero(sparsity_);
      for (float& v : w)
        if (zero(rng)) v = 0.f;
    }
    if (keep_) {
      const int64_t rr = cg * p_.kh * p_.kw;
      for (int64_t k = 0; k < p_.k; ++k)
        for (int64_t i = 0; i < rr; ++i)
          if (!keep_(k, i)) w[static_cast<size_t>(k * rr + i)] = 0.f;
    }

    // Reference: the reference Conv kernel, then the scalar epilogue per output row.
    op_test::Attrs attrs{{"strides", std::vector<int64_t>{p_.stride_h, p_.stride_w}},
                         {"pads", std::vector<int64_t>{p_.pad_t, p_.pad_l, p_.pad_b, p_.pad_r}},
                         {"dilations", std::vector<int64_t>{p_.dil_h, p_.dil_w}},
                         {"group", p_.groups},
                         {"kernel_shape", std::vector<int64_t>{p_.kh, p_.kw}}};
    std::vector<op_test::In> ins{op_test::rt(op_test::f32({p_.n, p_.c, p_.h, p_.w}, x)),
                                 op_test::cst(op_test::f32({p_.k, cg, p_.kh, p_.kw}, w))};
    Tensor want = op_test::run1("Conv", ins, attrs);
    // |w||x| sums for the tolerance: the same conv on absolute values.
    std::vector<float> ax(x), aw(w);
    for (float& v : ax) v = std::fabs(v);
    for (float& v : aw) v = std::fabs(v);
    Tensor mag = op_test::run1("Conv",
                               {op_test::rt(op_test::f32({p_.n, p_.c, p_.h, p_.w}, ax)),
                                op_test::cst(op_test::f32({p_.k, cg, p_.kh, p_.kw}, aw))},
                               attrs);
    float* wp = want.data<float>();
    const size_t plane = static_cast<size_t>(oh * ow);
    for (int64_t n = 0; n < p_.n; ++n)
      for (int64_t k = 0; k < p_.k; ++k) {
        const size_t off = static_cast<size_t>((n * p_.k + k)) * plane;
        ukernel::f32_vepilogue__scalar(plane, wp + off, p_.has_bias ? b[k] : 0.f,
                                       p_.epilogue.residual ? res.data() + off : nullptr,
                                       p_.epilogue.act, p_.epilogue.p0, p_.epilogue.p1);
      }

    auto prepared =
        algo.prepare(p_, ConvWeights::f32(w.data(), p_.has_bias ? b.data() : nullptr), knobs, isa);
    ThreadPool pool(threads_);
    std::vector<unsigned char> ws(prepared->workspace_bytes(threads_) + 64);
    void* wsp = ws.data() + (64 - reinterpret_cast<uintptr_t>(ws.data()) % 64) % 64;
    std::vector<float> got(res.size(), std::nanf(""));
    prepared->run(x.data(), got.data(), p_.epilogue.residual ? res.data() : nullptr, wsp, pool);

    const double r = static_cast<double>(cg * p_.kh * p_.kw);
    const double eps = 1.19209290e-7;
    const float* mp = mag.data<float>();
    int64_t bad = 0;
    for (size_t i = 0; i < got.size(); ++i) {
      // Activations are 1-Lipschitz (HardSigmoid: |alpha|), so the bound carries through.
      const double lip = p_.epilogue.act == Activation::kHardSigmoid
                             ? std::max(1.0, std::fabs((double)p_.epilogue.p0))
                             : 1.0;
      const double tol = lip * (4 * eps * std::sqrt(r) * (mp[i] + 2.0)) + 1e-6;
      if (!(std::fabs((double)got[i] - wp[i]) <= tol)) {
        if (bad++ < 5)
          ADD_FAILURE() << what << ": output " << i << " got " << got[i] << " want " << wp[i]
                        << " tol " << tol;
      }
    }
    if (bad) ADD_FAILURE() << what << ": " << bad << " of " << got.size() << " outputs differ";
    return bad == 0;
  }

 private:
  mutable ConvProblem p_;
  int threads_ = 1;
  uint32_t seed_ = 1;
  double sparsity_ = 0;
  std::function<bool(int64_t, int64_t)> keep_;
};

// Generated shapes every algorithm is tested on (those it supports): odd sizes,
// stride 1/2, padding, dilation, groups, 1x1, 3x3, 5x5, 7x7, channel counts not
// divisible by any vector width, batch > 1.
std::vector<ConvProblem> generated_conv_problems();

}  // namespace dlas::test

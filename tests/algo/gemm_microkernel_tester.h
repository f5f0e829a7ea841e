// GemmMicrokernelTester: fluent tester (XNNPACK style) for one f32 GEMM microkernel
// call against a double-precision reference. B rows are addressed through the offset
// table (optionally scattered, in reverse order with gaps), B columns n..NR-1 and the
// zero-padded A rows are poisoned with NaN so nothing outside the m x n tile can leak,
// and C carries sentinels around the tile that must survive. Tolerance from the
// reduction length: 4 * eps * sqrt(k) * (sum |a b| + |init|) + 1e-30.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "algo/microkernels/f32-gemm/f32_gemm.h"

namespace dlas::test {

class GemmMicrokernelTester {
 public:
  GemmMicrokernelTester& mr(size_t v) {
    mr_ = v;
    return *this;
  }
  GemmMicrokernelTester& nr(size_t v) {
    nr_ = v;
    return *this;
  }
  GemmMicrokernelTester& m(size_t v) {
    m_ = v;
    return *this;
  }
  GemmMicrokernelTester& n(size_t v) {
    n_ = v;
    return *this;
  }
  GemmMicrokernelTester& k(size_t v) {
    k_ = v;
    return *this;
  }
  GemmMicrokernelTester& ldc(size_t v) {
    ldc_ = v;
    return *this;
  }
  GemmMicrokernelTester& accumulate(bool v) {
    accumulate_ = v;
    return *this;
  }
  GemmMicrokernelTester& bias(bool v) {
    bias_ = v;
    return *this;
  }
  GemmMicrokernelTester& clamp(float lo, float hi) {
    min_ = lo;
    max_ = hi;
    return *this;
  }
  // B rows at scattered offsets (reverse order, gaps) instead of a dense stride.
  GemmMicrokernelTester& scattered_b(bool v) {
    scattered_ = v;
    return *this;
  }
  GemmMicrokernelTester& seed(uint32_t v) {
    seed_ = v;
    return *this;
  }
  GemmMicrokernelTester& kernel(const ukernel::F32GemmUkernel& u) {
    return mr(static_cast<size_t>(u.mr)).nr(static_cast<size_t>(u.nr));
  }

  bool test(ukernel::F32GemmFn fn, const std::string& name) const {
    const size_t ldc = ldc_ ? ldc_ : n_ + 3;
    std::mt19937 rng(seed_);
    std::uniform_real_distribution<float> dist(-1.f, 1.f);
    const float nan = std::numeric_limits<float>::quiet_NaN();
    std::vector<float> a(m_ * k_);
    for (float& v : a) v = dist(rng);
    // B: k rows of NR floats; row kk at offset off[kk]; columns >= n poisoned.
    const size_t gap = scattered_ ? 5 : 0, row = nr_ + gap;
    std::vector<float> b(k_ * row + 1, nan);
    std::vector<int64_t> off(k_);
    for (size_t kk = 0; kk < k_; ++kk) {
      off[kk] = static_cast<int64_t>((scattered_ ? k_ - 1 - kk : kk) * row);
      for (size_t j = 0; j < n_; ++j) b[off[kk] + j] = dist(rng);
    }
    std::vector<float> packed(mr_ * k_);
    ukernel::pack_a_panel(mr_, m_, k_, a.data(), k_, packed.data());
    std::vector<float> bias(mr_, nan);
    for (size_t i = 0; i < m_; ++i) bias[i] = dist(rng);
    const float sentinel = 1234.5f;
    std::vector<float> c(mr_ * ldc + 8, sentinel);
    for (size_t i = 0; i < m_; ++i)
      for (size_t j = 0; j < n_; ++j) c[i * ldc + j] = accumulate_ ? dist(rng) : nan;
    const std::vector<float> c0 = c;

    fn(m_, n_, k_, packed.data(), b.data(), off.data(), c.data(), ldc,
       bias_ ? bias.data() : nullptr, accumulate_, min_, max_);

    const std::string what = name + " m=" + std::to_string(m_) + " n=" + std::to_string(n_) +
                             " k=" + std::to_string(k_) + (accumulate_ ? " acc" : "") +
                             (bias_ ? " bias" : "") + (scattered_ ? " scattered" : "");
    const double eps = std::numeric_limits<float>::epsilon();
    int bad = 0;
    for (size_t i = 0; i < mr_; ++i)
      for (size_t j = 0; j < ldc; ++j) {
        const size_t idx = i * ldc + j;
        if (i >= m_ || j >= n_) {
          if (!(c[idx] == sentinel) && bad++ < 3)
            ADD_FAILURE() << what << ": wrote outside the tile at " << i << "," << j;
          continue;
        }
        double init = accumulate_ ? c0[idx] : (bias_ ? bias[i] : 0.0);
        double sum = init, mag = std::fabs(init);
        for (size_t kk = 0; kk < k_; ++kk) {
          const double p = static_cast<double>(a[i * k_ + kk]) * b[off[kk] + j];
          sum += p;
          mag += std::fabs(p);
        }
        sum = sum < min_ ? min_ : (sum > max_ ? max_ : sum);
        const double tol = 4 * eps * std::sqrt(static_cast<double>(k_) + 1) * mag + 1e-30;
        if (!(std::fabs(c[idx] - sum) <= tol) && bad++ < 3)
          ADD_FAILURE() << what << ": C[" << i << "][" << j << "] = " << c[idx] << ", want " << sum
                        << " (tol " << tol << ")";
      }
    for (size_t idx = mr_ * ldc; idx < c.size(); ++idx)
      if (!(c[idx] == sentinel) && bad++ < 3) ADD_FAILURE() << what << ": wrote past C";
    return bad == 0;
  }

 private:
  size_t mr_ = 1, nr_ = 1, m_ = 1, n_ = 1, k_ = 1, ldc_ = 0;
  bool accumulate_ = false, bias_ = false, scattered_ = false;
  float min_ = -std::numeric_limits<float>::infinity();
  float max_ = std::numeric_limits<float>::infinity();
  uint32_t seed_ = 7;
};

}  // namespace dlas::test

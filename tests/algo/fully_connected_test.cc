// PreparedFullyConnected against a double reference: batch 1 (GEMV path) and larger
// batches (MRxNR path), both weight layouts, bias, fused activations and residual,
// ragged N and K, one and two threads, every supported ISA.
#include "dlas/algo/fully_connected.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "algo/microkernels/f32-vepilogue/f32_vepilogue.h"
#include "dlas/hw/thread_pool.h"

namespace dlas::test {
namespace {

void check_fc(Isa isa, int64_t m, int64_t k, int64_t n, bool nk, bool bias, Epilogue e, int threads,
              int64_t rows_hint = 0) {
  std::mt19937 rng(static_cast<uint32_t>(m * 131 + k * 7 + n));
  std::uniform_real_distribution<float> dist(-1.f, 1.f);
  std::vector<float> x(m * k), w(k * n), b(n), res(m * n);
  for (auto* v : {&x, &w, &b, &res})
    for (float& f : *v) f = dist(rng);
  PreparedFullyConnected fc(k, n, w.data(), nk, bias ? b.data() : nullptr, e, isa, rows_hint);
  ThreadPool pool(threads);
  std::vector<unsigned char> ws(fc.workspace_bytes(m, threads) + 64);
  void* wsp = ws.data() + (64 - reinterpret_cast<uintptr_t>(ws.data()) % 64) % 64;
  std::vector<float> y(m * n + 1, std::nanf(""));
  y[m * n] = 42.f;
  fc.run(m, x.data(), y.data(), e.residual ? res.data() : nullptr, wsp, pool);
  EXPECT_EQ(y[m * n], 42.f) << "wrote past y";
  const double eps = std::numeric_limits<float>::epsilon();
  int bad = 0;
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double s = (bias ? b[j] : 0.0) + (e.residual ? res[i * n + j] : 0.0), mag = std::fabs(s);
      for (int64_t kk = 0; kk < k; ++kk) {
        const double p = (double)x[i * k + kk] * (nk ? w[j * k + kk] : w[kk * n + j]);
        s += p;
        mag += std::fabs(p);
      }
      float want = static_cast<float>(s);
      ukernel::f32_vepilogue__scalar(1, &want, 0.f, nullptr, e.act, e.p0, e.p1);
      const double tol = 4 * eps * std::sqrt((double)k + 1) * (mag + 1) + 1e-6;
      if (!(std::fabs(y[i * n + j] - want) <= tol) && bad++ < 3)
        ADD_FAILURE() << isa_name(isa) << " m=" << m << " k=" << k << " n=" << n
                      << (nk ? " nk" : " kn") << " act=" << activation_name(e.act)
                      << (e.residual ? " +res" : "") << " threads=" << threads << ": y[" << i
                      << "][" << j << "] = " << y[i * n + j] << ", want " << want;
    }
}

TEST(FullyConnected, ShapesLayoutsBias) {
  for (Isa isa : supported_isas())
    for (int64_t m : {1, 2, 3, 7, 13})
      for (int64_t k : {1, 5, 64, 300, 1100})
        for (int64_t n : {1, 10, 17, 64, 130})
          for (bool nk : {true, false}) check_fc(isa, m, k, n, nk, m % 2 == 1, Epilogue{}, 1);
}

// Packed for the MR-row kernel alone (the plan's hint of many rows): any row count still
// runs, batch-1 rows included.
TEST(FullyConnected, PackedForManyRowsRunsAnyRowCount) {
  for (Isa isa : supported_isas())
    for (int64_t m : {1, 2, 15, 60})
      for (int64_t n : {10, 130})
        for (bool nk : {true, false})
          check_fc(isa, m, 300, n, nk, true, Epilogue{Activation::kGelu}, 2, /*rows_hint=*/60);
}

TEST(FullyConnected, EpiloguesAndThreads) {
  Epilogue relu{Activation::kRelu}, clip{Activation::kClip, -0.5f, 0.5f}, sig{Activation::kSigmoid};
  Epilogue res_relu{Activation::kRelu, 0, 0, true}, res_silu{Activation::kSilu, 0, 0, true};
  Epilogue gelu{Activation::kGelu}, res_gelu{Activation::kGelu, 0, 0, true};
  for (Isa isa : supported_isas())
    for (const Epilogue& e : {relu, clip, sig, res_relu, res_silu, gelu, res_gelu})
      for (int64_t m : {1, 9, 100})
        for (int64_t n : {150, 10})  // 10: the dot products at m = 1 (narrow outputs)
          for (int threads : {1, 2}) check_fc(isa, m, 200, n, true, true, e, threads);
}

}  // namespace
}  // namespace dlas::test

// Blocked-layout pooling (nchw8c / nchw16c) against the NCHW kernels through reorders, for
// every kernel set this CPU runs (production and test-only); the input's padding lanes hold
// a finite non-zero value that must never reach a real lane.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "algo/pool/pool_nchwc.h"
#include "dlas/algo/layout.h"
#include "dlas/algo/pool.h"
#include "dlas/core/error.h"
#include "dlas/hw/thread_pool.h"

namespace dlas::test {
namespace {

std::vector<const ukernel::F32PoolNchwcUkernels*> kernel_sets() {
  std::vector<const ukernel::F32PoolNchwcUkernels*> out;
  for (const auto* list :
       {&ukernel::f32_poolnchwc_ukernels(), &ukernel::f32_poolnchwc_test_only_ukernels()})
    for (const ukernel::F32PoolNchwcUkernels& u : *list)
      if (isa_supported(u.isa)) out.push_back(&u);
  return out;
}

Layout layout_of(const ukernel::F32PoolNchwcUkernels& u) {
  return u.lanes == 16 ? Layout::kNchw16c : Layout::kNchw8c;
}

PoolProblem pool(int64_t c, int64_t h, int64_t k, int64_t s, int64_t pad, int64_t dil = 1,
                 bool ceil_mode = false) {
  PoolProblem p;
  p.n = 2, p.c = c, p.h = p.w = h;
  p.kh = p.kw = k;
  p.stride_h = p.stride_w = s;
  p.pad_t = p.pad_l = p.pad_b = p.pad_r = pad;
  p.dil_h = p.dil_w = dil;
  p.set_output_size(ceil_mode);
  return p;
}

std::vector<PoolProblem> problems() {
  std::vector<PoolProblem> out;
  for (int64_t c : {3, 13, 24, 40}) {
    out.push_back(pool(c, 7, 3, 1, 1));           // 7x7
    out.push_back(pool(c, 7, 3, 2, 1));           // 4x4
    out.push_back(pool(c, 8, 2, 2, 0));           // 4x4
    out.push_back(pool(c, 4, 3, 2, 1));           // 2x2
    out.push_back(pool(c, 2, 3, 1, 1));           // 2x2
    out.push_back(pool(c, 3, 3, 1, 0));           // 1x1
    out.push_back(pool(c, 7, 5, 1, 2));           // 7x7
    out.push_back(pool(c, 7, 7, 1, 3));           // 7x7
    out.push_back(pool(c, 9, 3, 2, 1, 1, true));  // ceil mode
  }
  PoolProblem a = pool(13, 9, 3, 2, 1);  // asymmetric pads
  a.pad_t = 0, a.pad_r = 2, a.stride_h = 1;
  a.set_output_size(false);
  out.push_back(a);
  return out;
}

std::vector<float> random(int64_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(-2.f, 2.f);
  std::vector<float> v(static_cast<size_t>(n));
  for (float& x : v) x = d(rng);
  return v;
}

// x (NCHW) reordered to l with every padding lane set to `fill`.
std::vector<float> blocked_input(const std::vector<float>& x, int64_t n, int64_t c, int64_t hw,
                                 Layout l, float fill, ThreadPool& pool) {
  std::vector<float> xb(static_cast<size_t>(layout_numel(n, c, hw, l)));
  reorder(x.data(), Layout::kNchw, xb.data(), l, n, c, hw, pool);
  const int64_t b = layout_block(l), cb = blocked_channels(c, l) / b;
  for (int64_t i = 0; i < n; ++i)
    for (int64_t lane = c; lane < cb * b; ++lane)
      for (int64_t q = 0; q < hw; ++q) xb[layout_offset(l, c, hw, i, lane, q)] = fill;
  return xb;
}

enum class Op { kMax, kAvg, kAvgIncludePad };

void check(const ukernel::F32PoolNchwcUkernels& u, const PoolProblem& p, Op op, int threads) {
  ThreadPool pool(threads);
  const Layout l = layout_of(u);
  const int64_t hw = p.h * p.w, ohw = p.oh * p.ow;
  const std::vector<float> x = random(p.n * p.c * hw, 7);
  const std::vector<float> xb = blocked_input(x, p.n, p.c, hw, l, 1e3f, pool);
  std::vector<float> want(static_cast<size_t>(p.n * p.c * ohw));
  std::vector<float> yb(static_cast<size_t>(layout_numel(p.n, p.c, ohw, l)), NAN);
  if (op == Op::kMax) {
    max_pool(Isa::kScalar, p, x.data(), want.data(), pool);
    max_pool_nchwc(u, p, xb.data(), yb.data(), pool);
  } else {
    average_pool(Isa::kScalar, p, op == Op::kAvgIncludePad, x.data(), want.data(), pool);
    average_pool_nchwc(u, p, op == Op::kAvgIncludePad, xb.data(), yb.data(), pool);
  }
  std::vector<float> got(want.size());
  reorder(yb.data(), l, got.data(), Layout::kNchw, p.n, p.c, ohw, pool);
  const std::string what = std::string(u.name) + " op " + std::to_string(static_cast<int>(op)) +
                           " c" + std::to_string(p.c) + " " + std::to_string(p.h) + "x" +
                           std::to_string(p.w) + " k" + std::to_string(p.kh) + " s" +
                           std::to_string(p.stride_w) + " pad" + std::to_string(p.pad_l) + " d" +
                           std::to_string(p.dil_w);
  for (size_t i = 0; i < want.size(); ++i) ASSERT_EQ(got[i], want[i]) << what << " at " << i;
  // Every padding lane stays finite.
  for (float v : yb) ASSERT_TRUE(std::isfinite(v)) << what;
}

TEST(PoolNchwc, MaxAndAverageEveryKernelSet) {
  if (kernel_sets().empty()) GTEST_SKIP() << "no AVX2";
  const std::vector<PoolProblem> ps = problems();
  for (const auto* u : kernel_sets())
    for (size_t i = 0; i < ps.size(); ++i)
      for (Op op : {Op::kMax, Op::kAvg, Op::kAvgIncludePad})
        check(*u, ps[i], op, 1 + static_cast<int>(i % 2));  // 1 and 2 threads in turn
}

TEST(PoolNchwc, DilatedMax) {
  for (const auto* u : kernel_sets())
    for (int64_t c : {3, 24}) check(*u, pool(c, 9, 3, 1, 2, 2), Op::kMax, 2);
}

TEST(PoolNchwc, GlobalAverageEveryKernelSet) {
  if (kernel_sets().empty()) GTEST_SKIP() << "no AVX2";
  ThreadPool pool(2);
  for (const auto* u : kernel_sets())
    for (int64_t c : {3, 13, 24, 40})
      for (int64_t hw : {1, 4, 49, 50}) {
        const Layout l = layout_of(*u);
        const int64_t n = 2;
        const std::vector<float> x = random(n * c * hw, 11);
        const std::vector<float> xb = blocked_input(x, n, c, hw, l, -7.f, pool);
        std::vector<float> want(static_cast<size_t>(n * c));
        global_average_pool(Isa::kScalar, n * c, hw, x.data(), want.data(), pool);
        std::vector<float> yb(static_cast<size_t>(layout_numel(n, c, 1, l)), NAN);
        global_average_pool_nchwc(*u, n, c, hw, xb.data(), yb.data(), pool);
        std::vector<float> got(want.size());
        reorder(yb.data(), l, got.data(), Layout::kNchw, n, c, 1, pool);
        for (size_t i = 0; i < want.size(); ++i)
          ASSERT_NEAR(got[i], want[i], 1e-5f) << u->name << " c" << c << " hw" << hw << " at " << i;
      }
}

TEST(PoolNchwc, PublicEntryPointsCheckTheIsa) {
  PoolProblem p = pool(13, 7, 3, 1, 1);
  std::vector<float> x(static_cast<size_t>(layout_numel(p.n, p.c, 49, Layout::kNchw16c)), 0.f);
  std::vector<float> y(x.size());
  ThreadPool tp(1);
  EXPECT_THROW(max_pool(Isa::kAvx2, Layout::kNchw16c, p, x.data(), y.data(), tp), Error);
  EXPECT_THROW(max_pool(Isa::kScalar, Layout::kNchw8c, p, x.data(), y.data(), tp), Error);
  if (isa_supported(Isa::kAvx2)) {
    max_pool(Isa::kAvx2, Layout::kNchw8c, p, x.data(), y.data(), tp);
    EXPECT_EQ(y[0], 0.f);
  }
}

}  // namespace
}  // namespace dlas::test

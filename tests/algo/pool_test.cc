// Fast pooling (include/dlas/algo/pool.h) against the reference MaxPool, AveragePool and
// GlobalAveragePool kernels on generated shapes, every supported ISA, 1 and 2 threads.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>

#include "algo/op_test_util.h"
#include "dlas/algo/pool.h"
#include "dlas/core/dtype.h"
#include "dlas/core/error.h"
#include "dlas/hw/thread_pool.h"

namespace dlas::test {
namespace {

struct Case {
  int64_t n, c, h, w, kh, kw, s, pt, pl, pb, pr, d;
  bool ceil;
};

// Stems (3x3 s2 p1, 2x2 s2), stride 1, asymmetric pads, ceil_mode with a partial last
// window, dilation, odd sizes, windows as large as the input, stride 3.
const Case kCases[] = {
    {1, 3, 16, 16, 3, 3, 2, 1, 1, 1, 1, 1, false}, {2, 5, 17, 15, 3, 3, 2, 1, 1, 1, 1, 1, true},
    {1, 4, 32, 32, 2, 2, 2, 0, 0, 0, 0, 1, false}, {1, 3, 9, 11, 2, 2, 2, 0, 0, 0, 0, 1, true},
    {1, 2, 13, 37, 3, 3, 1, 1, 1, 1, 1, 1, false}, {1, 3, 10, 12, 3, 2, 1, 2, 0, 1, 1, 1, false},
    {1, 2, 12, 14, 5, 5, 2, 2, 2, 2, 2, 1, true},  {1, 2, 14, 13, 3, 3, 1, 2, 2, 2, 2, 2, false},
    {1, 3, 7, 7, 7, 7, 1, 0, 0, 0, 0, 1, false},   {1, 2, 19, 22, 3, 3, 3, 1, 0, 0, 1, 1, true},
    {1, 2, 6, 5, 3, 3, 2, 1, 1, 1, 1, 2, true},    {1, 1, 40, 70, 3, 3, 2, 0, 0, 0, 0, 1, false},
};

PoolProblem problem(const Case& c) {
  PoolProblem p;
  p.n = c.n, p.c = c.c, p.h = c.h, p.w = c.w, p.kh = c.kh, p.kw = c.kw;
  p.stride_h = p.stride_w = c.s;
  p.pad_t = c.pt, p.pad_l = c.pl, p.pad_b = c.pb, p.pad_r = c.pr;
  p.dil_h = p.dil_w = c.d;
  p.set_output_size(c.ceil);
  return p;
}

op_test::Attrs attrs(const Case& c, bool max, bool include_pad) {
  op_test::Attrs a{{"kernel_shape", std::vector<int64_t>{c.kh, c.kw}},
                   {"strides", std::vector<int64_t>{c.s, c.s}},
                   {"pads", std::vector<int64_t>{c.pt, c.pl, c.pb, c.pr}},
                   {"ceil_mode", int64_t{c.ceil}}};
  if (max || c.d != 1) a["dilations"] = std::vector<int64_t>{c.d, c.d};
  if (!max) a["count_include_pad"] = int64_t{include_pad};
  return a;
}

std::vector<float> random(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-1.f, 1.f);
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng);
  return v;
}

TEST(FastPool, MaxPoolMatchesReferenceExactly) {
  for (Isa isa : supported_isas())
    for (int threads : {1, 2})
      for (const Case& c : kCases) {
        const PoolProblem p = problem(c);
        std::vector<float> x = random(static_cast<size_t>(c.n * c.c * c.h * c.w), 7);
        x[3] = std::numeric_limits<float>::quiet_NaN();  // a NaN tap poisons its windows
        Tensor want = op_test::run1("MaxPool", {op_test::rt(op_test::f32({c.n, c.c, c.h, c.w}, x))},
                                    attrs(c, true, false));
        ASSERT_EQ(want.dim(2), p.oh);
        ASSERT_EQ(want.dim(3), p.ow);
        std::vector<float> got(static_cast<size_t>(want.numel()), 42.f);
        ThreadPool pool(threads);
        max_pool(isa, p, x.data(), got.data(), pool);
        const float* wp = want.data<float>();
        int bad = 0;
        for (size_t i = 0; i < got.size(); ++i) {
          const bool same = std::isnan(wp[i]) ? std::isnan(got[i]) : got[i] == wp[i];
          if (!same && bad++ < 3)
            ADD_FAILURE() << isa_name(isa) << " case h" << c.h << "w" << c.w << " k" << c.kh << " s"
                          << c.s << ": out " << i << " got " << got[i] << " want " << wp[i];
        }
      }
}

TEST(FastPool, AveragePoolMatchesReference) {
  const double eps = std::numeric_limits<float>::epsilon();
  for (Isa isa : supported_isas())
    for (int threads : {1, 2})
      for (bool include_pad : {false, true})
        for (const Case& c : kCases) {
          const PoolProblem p = problem(c);
          const std::vector<float> x = random(static_cast<size_t>(c.n * c.c * c.h * c.w), 9);
          Tensor want =
              op_test::run1("AveragePool", {op_test::rt(op_test::f32({c.n, c.c, c.h, c.w}, x))},
                            attrs(c, false, include_pad));
          ASSERT_EQ(want.dim(2), p.oh);
          ASSERT_EQ(want.dim(3), p.ow);
          std::vector<float> got(static_cast<size_t>(want.numel()), 42.f);
          ThreadPool pool(threads);
          average_pool(isa, p, include_pad, x.data(), got.data(), pool);
          const float* wp = want.data<float>();
          // |x| <= 1: a sum of R taps rounds by at most R eps, the divide by one more ulp.
          const double tol = (c.kh * c.kw + 2) * eps;
          int bad = 0;
          for (size_t i = 0; i < got.size(); ++i)
            if (!(std::fabs(double(got[i]) - wp[i]) <= tol) && bad++ < 3)
              ADD_FAILURE() << isa_name(isa) << " include_pad=" << include_pad << " case h" << c.h
                            << "w" << c.w << " k" << c.kh << " s" << c.s << ": out " << i << " got "
                            << got[i] << " want " << wp[i];
        }
}

TEST(FastPool, GlobalAveragePoolMatchesReference) {
  const double eps = std::numeric_limits<float>::epsilon();
  const int64_t shapes[][3] = {{1, 5, 1}, {2, 7, 49}, {1, 3, 15}, {1, 4, 16}, {1, 2, 1000}};
  for (Isa isa : supported_isas())
    for (int threads : {1, 2})
      for (const auto& s : shapes) {
        const std::vector<float> x = random(static_cast<size_t>(s[0] * s[1] * s[2]), 11);
        Tensor want = op_test::run1("GlobalAveragePool",
                                    {op_test::rt(op_test::f32({s[0], s[1], s[2], 1}, x))});
        std::vector<float> got(static_cast<size_t>(s[0] * s[1]), 42.f);
        ThreadPool pool(threads);
        global_average_pool(isa, s[0] * s[1], s[2], x.data(), got.data(), pool);
        // |x| <= 1: float partial sums err by <= hw eps in the mean, plus the divide.
        const double tol = (std::sqrt(double(s[2])) * 4 + 2) * eps;
        for (size_t i = 0; i < got.size(); ++i)
          EXPECT_NEAR(got[i], want.data<float>()[i], tol) << isa_name(isa) << " hw=" << s[2];
      }
}

// The 16-bit pools are the f32 pools on the exactly widened input, rounded once per output:
// bit for bit, for both types, every ISA, 1 and 2 threads; on AVX-512 paths they run on
// 16-channel blocks, so the cases add channel counts of whole blocks and a partial last one.
TEST(FastPool, H16PoolsAreTheF32PoolsRoundedOnce) {
  std::vector<Case> cases(std::begin(kCases), std::end(kCases));
  cases.push_back({2, 37, 11, 9, 3, 3, 2, 1, 1, 1, 1, 1, true});
  cases.push_back({1, 32, 8, 8, 2, 2, 2, 0, 0, 0, 0, 1, false});
  for (DType t : {DType::kF16, DType::kBF16}) {
    auto narrow = [t](float v) { return t == DType::kF16 ? f32_to_f16(v) : f32_to_bf16(v); };
    auto widen = [t](uint16_t v) { return t == DType::kF16 ? f16_to_f32(v) : bf16_to_f32(v); };
    for (Isa isa : supported_isas())
      for (int threads : {1, 2})
        for (const Case& c : cases) {
          const PoolProblem p = problem(c);
          const std::vector<float> r = random(static_cast<size_t>(c.n * c.c * c.h * c.w), 13);
          std::vector<uint16_t> xh(r.size());
          std::vector<float> xf(r.size());
          for (size_t i = 0; i < r.size(); ++i) xh[i] = narrow(r[i]), xf[i] = widen(xh[i]);
          ThreadPool pool(threads);
          const size_t out = static_cast<size_t>(c.n * c.c * p.oh * p.ow);
          for (int kind = 0; kind < 3; ++kind) {
            const size_t n = kind == 2 ? static_cast<size_t>(c.n * c.c) : out;
            std::vector<float> want(n);
            std::vector<uint16_t> got(n, 0x7e00);
            if (kind == 0) {
              max_pool(isa, p, xf.data(), want.data(), pool);
              max_pool_h16(t, isa, p, xh.data(), got.data(), pool);
            } else if (kind == 1) {
              average_pool(isa, p, true, xf.data(), want.data(), pool);
              average_pool_h16(t, isa, p, true, xh.data(), got.data(), pool);
            } else {
              global_average_pool(isa, c.n * c.c, c.h * c.w, xf.data(), want.data(), pool);
              global_average_pool_h16(t, isa, c.n * c.c, c.h * c.w, xh.data(), got.data(), pool);
            }
            for (size_t i = 0; i < n; ++i)
              ASSERT_EQ(got[i], narrow(want[i]))
                  << dtype_name(t) << " " << isa_name(isa) << " kind " << kind << " case h" << c.h
                  << "w" << c.w << " out " << i;
          }
        }
  }
}

TEST(FastPool, OutputSizeFollowsCeilMode) {
  PoolProblem p;
  p.n = 1, p.c = 1, p.h = 6, p.w = 6, p.kh = p.kw = 3, p.stride_h = p.stride_w = 2;
  p.set_output_size(false);
  EXPECT_EQ(p.oh, 2);
  p.set_output_size(true);
  EXPECT_EQ(p.oh, 3);
  p.pad_t = p.pad_b = 1;  // ceil: a window starting in the bottom padding is dropped
  p.h = 5;
  p.set_output_size(true);
  EXPECT_EQ(p.oh, 3);
}

TEST(FastPool, RejectsBadProblems) {
  PoolProblem p;
  p.n = 1, p.c = 1, p.h = 4, p.w = 4, p.kh = p.kw = 2, p.stride_h = 0, p.oh = p.ow = 2;
  std::vector<float> x(16), y(4);
  try {
    max_pool(Isa::kScalar, p, x.data(), y.data(), ThreadPool::serial());
    ADD_FAILURE() << "stride 0 accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kInvalidInput);
  }
}

}  // namespace
}  // namespace dlas::test

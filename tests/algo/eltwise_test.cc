// Fast elementwise ops (include/dlas/algo/eltwise.h) against the reference Add/Sub/Mul/Div
// and activation kernels: every supported broadcast in both operand orders, unsupported
// broadcasts refused, every supported ISA, 1 and 2 threads.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "algo/op_test_util.h"
#include "dlas/algo/eltwise.h"
#include "dlas/hw/thread_pool.h"

namespace dlas::test {
namespace {

std::vector<float> random(int64_t n, uint32_t seed, float lo = -2.f, float hi = 2.f) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(static_cast<size_t>(n));
  for (float& x : v) x = dist(rng);
  return v;
}

int64_t count(const Shape& s) {
  int64_t n = 1;
  for (int64_t d : s) n *= d;
  return n;
}

const char* kOps[] = {"Add", "Sub", "Mul", "Div"};

TEST(FastEltwise, BinaryMatchesReferenceBitForBit) {
  const std::pair<Shape, Shape> cases[] = {
      {{2, 5, 7, 9}, {2, 5, 7, 9}},        // same shape
      {{2, 32, 24, 24}, {2, 32, 24, 24}},  // same shape, several chunks
      {{1, 16, 9, 11}, {1, 16, 1, 1}},     // per-channel [1,C,1,1]
      {{2, 16, 9, 11}, {16, 1, 1}},        // per-channel [C,1,1], batch 2
      {{2, 32, 24, 24}, {1, 32, 1, 1}},    // per-channel, several chunks
      {{3, 6, 5, 5}, {3, 6, 1, 1}},        // squeeze-and-excitation [N,C,1,1]
      {{2, 4, 6, 3}, {1}},                 // scalar
      {{2, 4, 6, 3}, {}},                  // rank-0 scalar
      {{4, 10}, {10}},                     // FC bias along the last dim
      {{1, 40000}, {1, 1}},                // long scalar run split across chunks
      // Rows of the trailing dimensions both operands have in full:
      {{2, 4, 5, 5}, {2, 1, 5, 5}},            // matched, broadcast, matched
      {{1, 4, 3, 49, 49}, {1, 4, 1, 49, 49}},  // a window-attention mask, several chunks
      {{1, 4, 5, 6}, {1, 4, 1, 6}},
      {{3, 1, 5}, {1, 4, 5}},  // an output larger than either operand
  };
  for (Isa isa : supported_isas())
    for (int threads : {1, 2})
      for (const auto& [full, small] : cases)
        for (bool swap : {false, true})
          for (int op = 0; op < 4; ++op) {
            const Shape as = swap ? small : full, bs = swap ? full : small;
            const std::vector<float> a = random(count(as), 3, 0.5f, 2.f),
                                     b = random(count(bs), 5, 0.5f, 2.f);
            Tensor want = op_test::run1(
                kOps[op], {op_test::rt(op_test::f32(as, a)), op_test::rt(op_test::f32(bs, b))});
            std::vector<float> got(static_cast<size_t>(want.numel()), 42.f);
            ThreadPool pool(threads);
            ASSERT_TRUE(binary_supported(as, bs));
            ASSERT_TRUE(binary(isa, static_cast<BinaryOp>(op), a.data(), as, b.data(), bs,
                               got.data(), pool));
            ASSERT_EQ(want.numel(), static_cast<int64_t>(got.size()));
            int bad = 0;
            for (size_t i = 0; i < got.size(); ++i)
              if (got[i] != want.data<float>()[i] && bad++ < 3)
                ADD_FAILURE() << isa_name(isa) << " " << kOps[op] << " swap=" << swap << " full "
                              << full.size() << "-d numel " << got.size() << " at " << i << ": got "
                              << got[i] << " want " << want.data<float>()[i];
          }
}

TEST(FastEltwise, InPlaceOnTheFullOperand) {
  const Shape full{2, 8, 5, 5}, ch{1, 8, 1, 1};
  std::vector<float> a = random(count(full), 1), b = random(count(ch), 2);
  Tensor want =
      op_test::run1("Mul", {op_test::rt(op_test::f32(full, a)), op_test::rt(op_test::f32(ch, b))});
  ThreadPool pool(2);
  ASSERT_TRUE(binary(active_isa(), BinaryOp::kMul, a.data(), full, b.data(), ch, a.data(), pool));
  for (size_t i = 0; i < a.size(); ++i) ASSERT_EQ(a[i], want.data<float>()[i]) << i;
}

TEST(FastEltwise, RefusesOtherBroadcasts) {
  const std::pair<Shape, Shape> cases[] = {
      {{2, 1, 5, 5}, {1, 4, 1, 1}},  // neither has the output shape nor the last dim in full
      {{2, 4, 5, 1}, {2, 1, 5, 6}},  // one has the last dimension, the other broadcasts it
      {{3, 4}, {5, 4}},              // not broadcastable at all
  };
  std::vector<float> a(1000), b(1000), y(1000, 7.f);
  for (const auto& [as, bs] : cases) {
    EXPECT_FALSE(binary_supported(as, bs));
    EXPECT_FALSE(binary(Isa::kScalar, BinaryOp::kAdd, a.data(), as, b.data(), bs, y.data(),
                        ThreadPool::serial()));
  }
  EXPECT_EQ(y[0], 7.f);
}

TEST(FastEltwise, ActivationsMatchReference) {
  struct Case {
    const char* op;
    Activation act;
    float p0, p1;
    double tol;
  };
  const Case cases[] = {{"Relu", Activation::kRelu, 0, 0, 0},
                        {"Clip", Activation::kClip, -0.5f, 1.5f, 0},
                        {"Sigmoid", Activation::kSigmoid, 0, 0, 2e-6},
                        {"HardSigmoid", Activation::kHardSigmoid, 0.3f, 0.4f, 2e-6},
                        {"HardSwish", Activation::kHardSwish, 0, 0, 2e-6},
                        {"Erf", Activation::kErf, 0, 0, 2e-7}};
  const Shape s{2, 16, 30, 30};
  const std::vector<float> x = random(count(s), 13, -8.f, 8.f);
  for (Isa isa : supported_isas())
    for (int threads : {1, 2})
      for (const Case& c : cases) {
        op_test::Attrs attrs;
        // Built in one go: push_back onto a one-element vector trips GCC 12's -Warray-bounds.
        const std::vector<op_test::In> ins =
            c.act == Activation::kClip
                ? std::vector<op_test::In>{op_test::rt(op_test::f32(s, x)),
                                           op_test::cst(op_test::f32({}, {c.p0})),
                                           op_test::cst(op_test::f32({}, {c.p1}))}
                : std::vector<op_test::In>{op_test::rt(op_test::f32(s, x))};
        if (c.act == Activation::kHardSigmoid) attrs = {{"alpha", c.p0}, {"beta", c.p1}};
        Tensor want = op_test::run1(c.op, ins, attrs);
        std::vector<float> got(x.size(), 42.f);
        ThreadPool pool(threads);
        unary_activation(isa, c.act, c.p0, c.p1, x.size(), x.data(), got.data(), pool);
        int bad = 0;
        for (size_t i = 0; i < got.size(); ++i)
          if (!(std::fabs(double(got[i]) - want.data<float>()[i]) <= c.tol) && bad++ < 3)
            ADD_FAILURE() << isa_name(isa) << " " << c.op << " x=" << x[i] << " got " << got[i]
                          << " want " << want.data<float>()[i];
      }
  // Silu in place: x * sigmoid(x).
  std::vector<float> y = x;
  unary_activation(active_isa(), Activation::kSilu, 0, 0, y.size(), y.data(), y.data(),
                   ThreadPool::serial());
  for (size_t i = 0; i < y.size(); ++i)
    ASSERT_NEAR(y[i], x[i] / (1.0 + std::exp(-double(x[i]))), 1e-5) << x[i];
}

}  // namespace
}  // namespace dlas::test

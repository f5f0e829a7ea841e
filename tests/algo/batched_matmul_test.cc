// BatchedMatMul (a MatMul of two activations) against a double reference: attention's shapes
// (ViT's 197 tokens, a 49-token window), ragged M, K and N around the tile sizes, broadcast
// leading dimensions on either side, one and two threads, every supported ISA; nothing
// written past y.
//   build/dlas_tests --gtest_filter='BatchedMatMul*'
#include "dlas/algo/matmul.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "dlas/hw/thread_pool.h"

namespace dlas::test {
namespace {

int64_t numel(const Shape& s) {
  int64_t n = 1;
  for (int64_t d : s) n *= d;
  return n;
}

// Output batch index t's offset into an operand of shape s, with the output's leading dims.
int64_t offset_of(int64_t t, const Shape& s, const Shape& lead) {
  const size_t r = lead.size(), rs = s.size() - 2;
  int64_t off = 0, stride = s[s.size() - 2] * s.back();
  for (size_t i = r; i-- > 0;) {
    const int64_t idx = t % lead[i];
    t /= lead[i];
    const int64_t d = i + rs >= r ? s[i + rs - r] : 1;
    if (d != 1) off += idx * stride;
    stride *= d;
  }
  return off;
}

void check_matmul(Isa isa, const Shape& as, const Shape& bs, int threads) {
  ASSERT_TRUE(BatchedMatMul::supports(as, bs));
  std::mt19937 rng(static_cast<uint32_t>(numel(as) * 31 + numel(bs)));
  std::uniform_real_distribution<float> dist(-1.f, 1.f);
  std::vector<float> a(static_cast<size_t>(numel(as))), b(static_cast<size_t>(numel(bs)));
  for (float& v : a) v = dist(rng);
  for (float& v : b) v = dist(rng);
  BatchedMatMul mm(as, bs, isa);
  const int64_t m = mm.m(), k = mm.k(), n = mm.n(), batches = mm.batches();
  Shape lead(std::max(as.size(), bs.size()) - 2);
  for (size_t i = 0; i < lead.size(); ++i) {
    const size_t r = lead.size();
    const int64_t da = i + as.size() - 2 >= r ? as[i + as.size() - 2 - r] : 1;
    const int64_t db = i + bs.size() - 2 >= r ? bs[i + bs.size() - 2 - r] : 1;
    lead[i] = std::max(da, db);
  }
  ASSERT_EQ(batches, numel(lead));
  ThreadPool pool(threads);
  std::vector<unsigned char> ws(mm.workspace_bytes(threads) + 64);
  void* wsp = ws.data() + (64 - reinterpret_cast<uintptr_t>(ws.data()) % 64) % 64;
  const size_t ny = static_cast<size_t>(batches * m * n);
  std::vector<float> y(ny + 1, std::nanf(""));
  y[ny] = 42.f;
  mm.run(a.data(), b.data(), y.data(), wsp, pool);
  EXPECT_EQ(y[ny], 42.f) << "wrote past y";
  const double eps = std::numeric_limits<float>::epsilon();
  int bad = 0;
  for (int64_t t = 0; t < batches; ++t) {
    const float* at = a.data() + offset_of(t, as, lead);
    const float* bt = b.data() + offset_of(t, bs, lead);
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        double s = 0, mag = 0;
        for (int64_t kk = 0; kk < k; ++kk) {
          const double p = static_cast<double>(at[i * k + kk]) * bt[kk * n + j];
          s += p;
          mag += std::fabs(p);
        }
        const float got = y[static_cast<size_t>((t * m + i) * n + j)];
        const double tol = 4 * eps * std::sqrt(static_cast<double>(k) + 1) * (mag + 1);
        if (!(std::fabs(got - s) <= tol) && bad++ < 3)
          ADD_FAILURE() << isa_name(isa) << " " << shape_str(as) << " x " << shape_str(bs)
                        << " threads=" << threads << ": y[" << t << "][" << i << "][" << j
                        << "] = " << got << ", want " << s;
      }
  }
}

TEST(BatchedMatMul, AttentionShapesAndTails) {
  for (Isa isa : supported_isas()) {
    check_matmul(isa, {12, 197, 64}, {12, 64, 197}, 2);          // ViT-B/16's Q·Kᵀ
    check_matmul(isa, {12, 197, 197}, {12, 197, 64}, 2);         // and softmax·V
    check_matmul(isa, {1, 4, 3, 49, 32}, {1, 4, 3, 32, 49}, 1);  // Swin's windows
    for (int64_t m : {1, 5, 15, 29})
      for (int64_t k : {1, 3, 17, 600})
        for (int64_t n : {1, 7, 33, 65}) check_matmul(isa, {2, m, k}, {2, k, n}, m % 2 + 1);
  }
}

TEST(BatchedMatMul, BroadcastLeadingDimensions) {
  for (Isa isa : supported_isas()) {
    check_matmul(isa, {3, 9, 20}, {20, 11}, 2);           // a 2-D B for every batch
    check_matmul(isa, {9, 20}, {2, 3, 20, 11}, 2);        // a 2-D A
    check_matmul(isa, {2, 1, 9, 20}, {1, 3, 20, 11}, 2);  // both broadcast
    check_matmul(isa, {5, 4}, {4, 6}, 1);                 // plain matrices
  }
  EXPECT_FALSE(BatchedMatMul::supports({2, 3, 4}, {3, 4, 5}));  // 2 against 3 batches
  EXPECT_FALSE(BatchedMatMul::supports({3, 4}, {5, 6}));        // K differs
  EXPECT_FALSE(BatchedMatMul::supports({4}, {4, 6}));           // a vector
}

}  // namespace
}  // namespace dlas::test

// CSR / BSR formats: encode/decode round trips over block shapes and masks, sizes and
// compression, and validation of malformed structures.
#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "dlas/algo/sparse.h"
#include "dlas/core/error.h"

namespace dlas::test {
namespace {

std::vector<float> random_sparse(int64_t rows, int64_t cols, double sparsity, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-1.f, 1.f);
  std::bernoulli_distribution zero(sparsity);
  std::vector<float> m(static_cast<size_t>(rows * cols));
  for (float& v : m) v = zero(rng) ? 0.f : dist(rng);
  return m;
}

void expect_invalid(const SparseMatrix& m, const char* what) {
  try {
    validate_sparse(m);
    ADD_FAILURE() << what << ": accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kInvalidInput) << what;
  }
}

TEST(SparseMatrixTest, RoundTripsEveryBlockShape) {
  const SparseBlock blocks[] = {{1, 1}, {4, 1}, {8, 1}, {1, 4}, {2, 3}};
  const int64_t sizes[][2] = {{1, 1}, {7, 13}, {16, 64}, {33, 27}, {64, 576}};
  for (SparseBlock b : blocks)
    for (auto sz : sizes)
      for (double s : {0.0, 0.5, 0.9, 0.95, 1.0}) {
        const auto dense = random_sparse(sz[0], sz[1], s, 7);
        const SparseMatrix m = encode_sparse(dense.data(), sz[0], sz[1], b);
        validate_sparse(m);
        std::vector<float> back(dense.size(), 42.f);
        decode_sparse(m, back.data());
        EXPECT_EQ(back, dense) << sparse_format_name(b) << " " << sz[0] << "x" << sz[1];
        int64_t nz = 0;
        for (float v : dense) nz += v != 0.f;
        EXPECT_EQ(m.nnz(), nz);
        if (b == SparseBlock{1, 1}) {
          EXPECT_EQ(m.nnz_blocks(), nz);
        }
        EXPECT_GE(m.nnz_blocks() * b.rows * b.cols, nz);
      }
}

TEST(SparseMatrixTest, EmptyAndFullRows) {
  // Row 0 all zero, row 1 fully dense, row 2 a single nonzero.
  std::vector<float> d = {0, 0, 0, 0, 0, 1, 2, 3, 4, 5, 0, 0, 0, -7, 0};
  const SparseMatrix m = encode_csr(d.data(), 3, 5);
  EXPECT_EQ(m.row_ptr, (std::vector<int32_t>{0, 0, 5, 6}));
  EXPECT_EQ(m.col16, (std::vector<uint16_t>{0, 1, 2, 3, 4, 3}));
  EXPECT_EQ(m.values, (std::vector<float>{1, 2, 3, 4, 5, -7}));
  // Negative zero is an exact zero.
  std::vector<float> z = {-0.f, 0.f};
  EXPECT_EQ(encode_csr(z.data(), 1, 2).nnz_blocks(), 0);
}

TEST(SparseMatrixTest, BytesAndCompression) {
  const int64_t k = 256, r = 2304;  // a 3x3x256 -> 256 conv
  const auto dense = random_sparse(k, r, 0.95, 3);
  const SparseMatrix csr = encode_csr(dense.data(), k, r);
  EXPECT_FALSE(csr.wide_indices());
  EXPECT_EQ(csr.bytes(), csr.values.size() * 4 + (k + 1) * 4 + csr.col16.size() * 2);
  EXPECT_EQ(csr.dense_bytes(), static_cast<size_t>(k * r * 4));
  // The target: 95% CSR <= 12% of dense bytes (4+2 bytes per nonzero: ~7.5%).
  EXPECT_LE(static_cast<double>(csr.bytes()), 0.12 * static_cast<double>(csr.dense_bytes()));
  EXPECT_GT(csr.compression_ratio(), 8.0);
  const SparseMatrix bsr = encode_sparse(dense.data(), k, r, {4, 1});
  EXPECT_EQ(bsr.bytes(), bsr.values.size() * 4 + (k / 4 + 1) * 4 + bsr.col16.size() * 2);
  // Dense weights: CSR costs more than dense (indices), BSR 8x1 nearly nothing extra.
  const auto full = random_sparse(16, 64, 0.0, 4);
  EXPECT_LT(encode_csr(full.data(), 16, 64).compression_ratio(), 1.0);
  EXPECT_GT(encode_sparse(full.data(), 16, 64, {8, 1}).compression_ratio(), 0.9);
}

TEST(SparseMatrixTest, WideIndicesPastUint16) {
  const int64_t cols = 70000;
  std::vector<float> d(cols, 0.f);
  d[5] = 1.f, d[69999] = 2.f;
  const SparseMatrix m = encode_csr(d.data(), 1, cols);
  EXPECT_TRUE(m.wide_indices());
  EXPECT_EQ(m.col32, (std::vector<int32_t>{5, 69999}));
  EXPECT_TRUE(m.col16.empty());
  EXPECT_EQ(m.bytes(), 2 * 4 + 2 * 4 + 2 * 4u);
  std::vector<float> back(cols);
  decode_sparse(m, back.data());
  EXPECT_EQ(back, d);
}

TEST(SparseMatrixTest, MalformedStructuresAreInvalidInput) {
  const auto dense = random_sparse(6, 10, 0.5, 9);
  const SparseMatrix good = encode_csr(dense.data(), 6, 10);
  ASSERT_GT(good.nnz_blocks(), 3);
  SparseMatrix m = good;
  std::swap(m.row_ptr[2], m.row_ptr[3]);
  if (m.row_ptr[2] != m.row_ptr[3]) expect_invalid(m, "non-monotone row pointers");
  m = good;
  m.row_ptr[3] = m.row_ptr[4] + 1;
  expect_invalid(m, "row pointer past the next");
  m = good;
  m.row_ptr[0] = 1;
  expect_invalid(m, "row_ptr[0] != 0");
  m = good;
  m.row_ptr.pop_back();
  expect_invalid(m, "missing row pointer");
  m = good;
  m.col16[0] = 10;
  expect_invalid(m, "column out of range");
  m = good;
  m.values.pop_back();
  expect_invalid(m, "values short");
  m = good;
  m.col16.pop_back();
  expect_invalid(m, "indices short");
  // Unsorted columns inside a row: find a row with two entries and swap them.
  m = good;
  for (size_t i = 0; i + 1 < m.row_ptr.size(); ++i)
    if (m.row_ptr[i + 1] - m.row_ptr[i] >= 2) {
      std::swap(m.col16[m.row_ptr[i]], m.col16[m.row_ptr[i] + 1]);
      expect_invalid(m, "unsorted columns");
      break;
    }
  std::vector<float> out(60);
  m = good;
  m.col16[1] = 200;
  EXPECT_THROW(decode_sparse(m, out.data()), Error);
  EXPECT_THROW(encode_sparse(dense.data(), 0, 10), Error);
  EXPECT_THROW(encode_sparse(dense.data(), 6, 10, {0, 1}), Error);
}

}  // namespace
}  // namespace dlas::test

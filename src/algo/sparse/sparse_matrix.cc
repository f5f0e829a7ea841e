// CSR / BSR encode, decode, validation and sizes (include/dlas/algo/sparse.h).
#include <string>

#include "dlas/algo/sparse.h"
#include "dlas/core/error.h"

namespace dlas {

std::string sparse_format_name(SparseBlock b) {
  if (b.rows == 1 && b.cols == 1) return "csr";
  return "bsr" + std::to_string(b.rows) + "x" + std::to_string(b.cols);
}

int64_t SparseMatrix::nnz() const {
  int64_t n = 0;
  for (float v : values) n += v != 0.f;
  return n;
}

size_t SparseMatrix::bytes() const {
  const size_t index_width = wide_indices() ? sizeof(int32_t) : sizeof(uint16_t);
  return values.size() * sizeof(float) + row_ptr.size() * sizeof(int32_t) +
         static_cast<size_t>(nnz_blocks()) * index_width;
}

double SparseMatrix::compression_ratio() const {
  const size_t b = bytes();
  return b == 0 ? 0.0 : static_cast<double>(dense_bytes()) / static_cast<double>(b);
}

SparseMatrix encode_sparse(const float* dense, int64_t rows, int64_t cols, SparseBlock block) {
  DLAS_CHECK(rows > 0 && cols > 0, ErrorKind::kInvalidInput, "sparse encode: matrix ", rows, "x",
             cols, " must have positive sizes");
  DLAS_CHECK(block.rows > 0 && block.cols > 0, ErrorKind::kInvalidInput, "sparse encode: block ",
             block.rows, "x", block.cols, " must have positive sizes");
  SparseMatrix m;
  m.rows = rows, m.cols = cols, m.block = block;
  const int64_t br = block.rows, bc = block.cols;
  const int64_t nbr = m.block_rows(), nbc = m.block_cols();
  DLAS_CHECK(nbr * nbc < (int64_t{1} << 31), ErrorKind::kUnsupported,
             "sparse encode: more than 2^31 blocks");
  const bool wide = m.wide_indices();
  m.row_ptr.reserve(static_cast<size_t>(nbr + 1));
  m.row_ptr.push_back(0);
  auto at = [&](int64_t i, int64_t j) { return i < rows && j < cols ? dense[i * cols + j] : 0.f; };
  for (int64_t bi = 0; bi < nbr; ++bi) {
    for (int64_t bj = 0; bj < nbc; ++bj) {
      bool any = false;
      for (int64_t i = 0; i < br && !any; ++i)
        for (int64_t j = 0; j < bc && !any; ++j) any = at(bi * br + i, bj * bc + j) != 0.f;
      if (!any) continue;
      if (wide)
        m.col32.push_back(static_cast<int32_t>(bj));
      else
        m.col16.push_back(static_cast<uint16_t>(bj));
      for (int64_t i = 0; i < br; ++i)
        for (int64_t j = 0; j < bc; ++j) m.values.push_back(at(bi * br + i, bj * bc + j));
    }
    m.row_ptr.push_back(static_cast<int32_t>(wide ? m.col32.size() : m.col16.size()));
  }
  return m;
}

void validate_sparse(const SparseMatrix& m) {
  const std::string what = "sparse " + sparse_format_name(m.block) + " " + std::to_string(m.rows) +
                           "x" + std::to_string(m.cols);
  DLAS_CHECK(m.rows > 0 && m.cols > 0 && m.block.rows > 0 && m.block.cols > 0,
             ErrorKind::kInvalidInput, what, ": non-positive size or block");
  const int64_t nbr = m.block_rows(), nbc = m.block_cols();
  DLAS_CHECK(static_cast<int64_t>(m.row_ptr.size()) == nbr + 1, ErrorKind::kInvalidInput, what,
             ": ", m.row_ptr.size(), " row pointers, want ", nbr + 1);
  DLAS_CHECK(m.row_ptr[0] == 0, ErrorKind::kInvalidInput, what, ": row_ptr[0] is ", m.row_ptr[0],
             ", want 0");
  for (int64_t i = 0; i < nbr; ++i)
    DLAS_CHECK(m.row_ptr[i + 1] >= m.row_ptr[i], ErrorKind::kInvalidInput, what,
               ": row pointers not monotone at block row ", i);
  const size_t nnzb = static_cast<size_t>(m.nnz_blocks());
  const bool wide = m.wide_indices();
  DLAS_CHECK((wide ? m.col32.size() : m.col16.size()) == nnzb &&
                 (wide ? m.col16.empty() : m.col32.empty()),
             ErrorKind::kInvalidInput, what, ": ", nnzb, " blocks but ",
             wide ? m.col32.size() : m.col16.size(), " ", wide ? "int32" : "uint16",
             " column indices");
  DLAS_CHECK(m.values.size() == nnzb * static_cast<size_t>(m.block.rows * m.block.cols),
             ErrorKind::kInvalidInput, what, ": ", m.values.size(), " values for ", nnzb,
             " blocks");
  for (int64_t i = 0; i < nbr; ++i)
    for (int64_t z = m.row_ptr[i]; z < m.row_ptr[i + 1]; ++z) {
      const int64_t c = m.block_col(z);
      DLAS_CHECK(c >= 0 && c < nbc, ErrorKind::kInvalidInput, what, ": block column ", c,
                 " out of range [0, ", nbc, ") in block row ", i);
      DLAS_CHECK(z == m.row_ptr[i] || c > m.block_col(z - 1), ErrorKind::kInvalidInput, what,
                 ": block columns not strictly increasing in block row ", i);
    }
}

void decode_sparse(const SparseMatrix& m, float* dense) {
  validate_sparse(m);
  const int64_t br = m.block.rows, bc = m.block.cols;
  for (int64_t i = 0; i < m.rows * m.cols; ++i) dense[i] = 0.f;
  for (int64_t bi = 0; bi < m.block_rows(); ++bi)
    for (int64_t z = m.row_ptr[bi]; z < m.row_ptr[bi + 1]; ++z) {
      const float* v = m.values.data() + z * br * bc;
      const int64_t bj = m.block_col(z);
      for (int64_t i = 0; i < br; ++i)
        for (int64_t j = 0; j < bc; ++j) {
          const int64_t r = bi * br + i, c = bj * bc + j;
          if (r < m.rows && c < m.cols) dense[r * m.cols + c] = v[i * bc + j];
        }
    }
}

double zero_fraction(const float* v, size_t n) {
  if (n == 0) return 0.0;
  size_t z = 0;
  for (size_t i = 0; i < n; ++i) z += v[i] == 0.f;
  return static_cast<double>(z) / static_cast<double>(n);
}

}  // namespace dlas

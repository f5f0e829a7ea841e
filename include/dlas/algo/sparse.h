// Sparse weight formats (DLAS layer 4): CSR, the format the DLAS paper measured, and BSR
// with configurable blocks. A conv's weights are viewed as a dense [K][R] matrix: row =
// output channel, column = reduction index r = (c, ky, kx) (R = C/g * KH * KW), one matrix
// per group.
//
// Both formats are one struct: CSR is BSR with 1x1 blocks. A block of shape BRxBC covers
// BR consecutive output channels x BC consecutive reduction indices; a block is stored
// when any of its elements is nonzero (exact zeros are dropped, -0.f counts as zero),
// its BR*BC values row-major, zeros inside a kept block included. Edge blocks of a matrix
// whose sides are not multiples of the block are zero-padded.
//
// Index storage (what bytes() counts): row pointers int32 (one per block row, plus one);
// block column indices uint16 when the matrix has <= 65536 block columns (every conv
// layer of the zoo), else int32; values float32.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace dlas {

// Block shape: output channels x reduction indices (1x1 = CSR; 4x1 = 4 output channels
// sharing one column index, what the sparse SpMM kernels vectorise best).
struct SparseBlock {
  int rows = 1, cols = 1;
  bool operator==(const SparseBlock&) const = default;
};

// "csr" for 1x1, else "bsr4x1" (rows x cols).
std::string sparse_format_name(SparseBlock b);

struct SparseMatrix {
  int64_t rows = 0, cols = 0;  // dense shape [rows][cols]
  SparseBlock block;
  std::vector<int32_t> row_ptr;  // block_rows() + 1 entries, in blocks, monotone
  std::vector<uint16_t> col16;   // block column of each block (when block_cols() <= 65536)
  std::vector<int32_t> col32;    // ... otherwise; exactly one of col16/col32 is in use
  std::vector<float> values;     // nnz_blocks() * rows * cols, block-major, row-major inside

  int64_t block_rows() const { return (rows + block.rows - 1) / block.rows; }
  int64_t block_cols() const { return (cols + block.cols - 1) / block.cols; }
  bool wide_indices() const { return block_cols() > 65536; }
  int64_t nnz_blocks() const { return row_ptr.empty() ? 0 : row_ptr.back(); }
  // Block column of the i-th stored block.
  int64_t block_col(int64_t i) const {
    return wide_indices() ? col32[static_cast<size_t>(i)] : col16[static_cast<size_t>(i)];
  }
  // Nonzero values (the stored block values that are not zero).
  int64_t nnz() const;
  // Stored bytes: values + row pointers + column indices (widths above).
  size_t bytes() const;
  size_t dense_bytes() const { return static_cast<size_t>(rows * cols) * sizeof(float); }
  // dense_bytes() / bytes() (> 1 when the format saves memory).
  double compression_ratio() const;
};

// dense: [rows][cols] row-major. Throws kInvalidInput for non-positive sizes or blocks.
SparseMatrix encode_sparse(const float* dense, int64_t rows, int64_t cols, SparseBlock block = {});
inline SparseMatrix encode_csr(const float* dense, int64_t rows, int64_t cols) {
  return encode_sparse(dense, rows, cols, SparseBlock{1, 1});
}
// Writes the dense [rows][cols] matrix (zeros where no block is stored). Validates first.
void decode_sparse(const SparseMatrix& m, float* dense);
// Throws kInvalidInput naming the defect: wrong array sizes, row pointers not starting at
// 0 or not monotone, block columns out of range or not strictly increasing within a row.
void validate_sparse(const SparseMatrix& m);

// Fraction of exact zeros in n floats (0 for n == 0).
double zero_fraction(const float* v, size_t n);

}  // namespace dlas

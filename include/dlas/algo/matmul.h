// MatMul of two activations (attention's Q·Kᵀ and softmax·V): y[b] = a[b] · b[b] for every
// batch index b of the broadcast leading dimensions, a[b] an M x K and b[b] a K x N
// row-major matrix, on the f32 GEMM microkernels. B's matrix is packed at run time into
// NR-column panels (a thread packs each batch it reaches once), A's rows into MR-row panels;
// no allocation in run(): scratch comes from the caller.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "dlas/core/tensor.h"
#include "dlas/hw/isa.h"

namespace dlas {

class ThreadPool;
namespace ukernel {
struct F32GemmUkernel;
}

class BatchedMatMul {
 public:
  // a_shape [..., M, K] and b_shape [..., K, N], ranks >= 2, leading dimensions broadcast
  // NumPy-style (as ONNX MatMul); both contiguous.
  BatchedMatMul(const Shape& a_shape, const Shape& b_shape, Isa isa);
  // Whether the shapes are a MatMul this kernel runs (ranks >= 2, K matching, leading
  // dimensions broadcastable).
  static bool supports(const Shape& a_shape, const Shape& b_shape);

  int64_t batches() const { return static_cast<int64_t>(a_off_.size()); }
  int64_t m() const { return m_; }
  int64_t k() const { return k_; }
  int64_t n() const { return n_; }
  // Scratch bytes run() needs on `threads` threads (64-byte aligned by the caller).
  size_t workspace_bytes(int threads) const;
  // y: [batches][M][N].
  void run(const float* a, const float* b, float* y, void* workspace, ThreadPool& pool) const;
  const char* ukernel_name() const;

 private:
  int64_t m_, k_, n_, npanels_;
  const ukernel::F32GemmUkernel* u_;
  std::vector<int64_t> a_off_, b_off_;  // per output batch: element offsets of its matrices
  std::vector<int64_t> row_off_;        // kk * NR: a packed B panel's rows
};

}  // namespace dlas

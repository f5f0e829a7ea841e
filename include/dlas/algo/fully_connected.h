// Fully-connected layers (Gemm / MatMul with a constant B): y[M][N] = act(x[M][K] W + bias
// (+ residual)) on the f32 GEMM microkernels. W is packed once into column panels so the
// microkernel's vector lanes run over N; at batch 1 (M small) a 1xNR GEMV kernel streams
// the panels with one accumulator set per column block, otherwise an MRxNR kernel runs on
// x packed into MR-row panels. No allocation in run(): scratch comes from the caller.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "dlas/algo/conv.h"
#include "dlas/hw/isa.h"

namespace dlas {

class ThreadPool;
namespace ukernel {
struct F32GemmUkernel;
}

class PreparedFullyConnected {
 public:
  // w: [n][k] when w_is_nk (ONNX Gemm transB=1, PyTorch Linear), else [k][n] (MatMul).
  // bias: [n] or null. epilogue.residual: run() takes a residual shaped like y.
  PreparedFullyConnected(int64_t k, int64_t n, const float* w, bool w_is_nk, const float* bias,
                         const Epilogue& epilogue, Isa isa);

  int64_t k() const { return k_; }
  int64_t n() const { return n_; }
  // Scratch bytes run() needs for m rows on `threads` threads (64-byte aligned by the caller).
  size_t workspace_bytes(int64_t m, int threads) const;
  // x: [m][k], y: [m][n], residual: [m][n] or null (must be given iff epilogue.residual).
  void run(int64_t m, const float* x, float* y, const float* residual, void* workspace,
           ThreadPool& pool) const;
  size_t packed_bytes() const { return (wpack_.size() + wnarrow_.size()) * sizeof(float); }

 private:
  // The packed GEMV / GEMM kernels over y (bias and residual already in it).
  void run_packed(int64_t m, const float* x, float* y, void* workspace, ThreadPool& pool,
                  float cmin, float cmax) const;
  int64_t k_, n_, panel_, npanels_;
  Isa isa_;
  Epilogue epilogue_;
  const ukernel::F32GemmUkernel* gemv_;  // 1 x NR (or the ISA default where none)
  const ukernel::F32GemmUkernel* gemm_;  // MR x NR, the ISA default
  std::vector<float> wpack_, bias_;
  // Outputs far narrower than the GEMV kernel's NR (a 10-class classifier against 128
  // columns): up to kGemvRows rows run as dot products over W kept [n][k].
  std::vector<float> wnarrow_;
  std::vector<int64_t> row_off_;  // kk * panel_
};

}  // namespace dlas

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
  // bias: [n] or null. epilogue.residual: run() takes a residual shaped like y. rows: the
  // rows run() will see, where known (0: any); beyond the GEMV's few, W is packed for the
  // MR-row kernel alone (any row count still runs), the ISA's tile that pads the rows x n
  // output least (ukernel::f32_gemm_for_output).
  PreparedFullyConnected(int64_t k, int64_t n, const float* w, bool w_is_nk, const float* bias,
                         const Epilogue& epilogue, Isa isa, int64_t rows = 0);

  int64_t k() const { return k_; }
  int64_t n() const { return n_; }
  // Scratch bytes run() needs for m rows on `threads` threads (64-byte aligned by the caller).
  size_t workspace_bytes(int64_t m, int threads) const;
  // x: [m][k], y: [m][n], residual: [m][n] or null (must be given iff epilogue.residual).
  void run(int64_t m, const float* x, float* y, const float* residual, void* workspace,
           ThreadPool& pool) const;
  size_t packed_bytes() const { return (wpack_.size() + wnarrow_.size()) * sizeof(float); }
  // The microkernel run() uses for m rows ("dot" for the narrow-output dot products).
  const char* ukernel_name(int64_t m) const;

 private:
  // The packed GEMV / GEMM kernels, each tile started from bias (+ residual) and finished
  // with the epilogue's activation.
  void run_packed(int64_t m, const float* x, float* y, const float* residual, void* workspace,
                  ThreadPool& pool, float cmin, float cmax) const;
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

// The same layer on bf16 values, natively where the path has bf16 dot products (AVX512-BF16
// and above): y[M][N] = act(x[M][K] W (+ bias)) with x and y bf16, W packed once into the bf16
// GEMM microkernels' NR-column pair panels (kept bf16), the rows of x packed per MR-row block
// at run time, each output rounded once from f32. For layers of many rows (a Linear layer
// on channels-last activations); the caller keeps a batch-1 classifier on the f32 kernels.
class PreparedFullyConnectedBf16 {
 public:
  // Whether `isa` has a native bf16 GEMM microkernel for it.
  static bool available(Isa isa);
  // w: bf16 bit patterns, [n][k] when w_is_nk else [k][n]; bias: [n] f32 or null;
  // epilogue: an activation applied to the f32 sums before rounding (no residual).
  PreparedFullyConnectedBf16(int64_t k, int64_t n, const uint16_t* w, bool w_is_nk,
                             const float* bias, const Epilogue& epilogue, Isa isa);
  // Rows below which the caller should prefer the widened f32 kernels (one tile's rows).
  static int64_t min_rows(Isa isa);
  // x: [m][k], y: [m][n] (bf16). Scratch: thread-local.
  void run(int64_t m, const uint16_t* x, uint16_t* y, ThreadPool& pool) const;
  size_t packed_bytes() const { return wpack_.size() * sizeof(uint16_t); }
  const char* ukernel_name() const;

 private:
  int64_t k_, kpad_, n_, npanels_;
  Isa isa_;
  Epilogue epilogue_;
  const void* uk_;  // ukernel::H16GemmUkernel
  std::vector<uint16_t> wpack_;
  std::vector<float> bias_;
};

// The same layer on int8 values (a QDQ-quantized Linear / Gemm), f32 out:
//   y[m][j] = act(fmaf((float)acc[m][j], x_scale * w_scale[j], bias[j]))
//   acc[m][j] = sum_kk (x[m][kk] - x_zero_point) * w[kk][j]            (int32, exact)
// with x u8 or s8 (per tensor) and w s8, symmetric per output column. The int8 GEMM tiles
// run with x as the broadcast operand (MR rows, read in place where the path allows, else
// packed per row block) and W as the vector operand (NR-column panels of 4-byte reduction
// groups, packed once), so the vector lanes run over the output columns; the zero-point
// correction folds into one int32 per column. Bit-exact against that formula on every path.
class PreparedFullyConnectedQs8 {
 public:
  // Whether `isa` (or a path below it that this CPU runs) has an int8 FC microkernel.
  static bool available(Isa isa);
  // w: s8, [n][k] when w_is_nk else [k][n]; w_scale: [n] (> 0); bias: [n] f32 or null;
  // epilogue: its activation (no residual); a clamp (Relu, Clip) runs in the microkernels'
  // store, any other (GELU) on each tile while it is in L1.
  PreparedFullyConnectedQs8(int64_t k, int64_t n, const int8_t* w, bool w_is_nk,
                            const float* w_scale, const float* bias, float x_scale,
                            int32_t x_zero_point, bool x_signed, const Epilogue& epilogue, Isa isa);
  int64_t k() const { return k_; }
  int64_t n() const { return n_; }
  // Scratch bytes run() needs for m rows on `threads` threads (64-byte aligned by the caller).
  size_t workspace_bytes(int64_t m, int threads) const;
  // x: [m][k] of u8 / s8 (as constructed), y: [m][n] f32.
  void run(int64_t m, const void* x, float* y, void* workspace, ThreadPool& pool) const;
  size_t packed_bytes() const;
  const char* ukernel_name() const;

 private:
  int64_t k_, n_, kq_, npanels_;
  Isa isa_;
  const void* uk_;   // ukernel::QS8FcUkernel: the path's default tile
  const void* uk1_;  // its MR = 1 tile (same NR and layout) for a few rows, or null
  bool x_signed_;
  uint8_t x_zp_stored_;  // the padding byte of a packed row (the zero point, as stored)
  Epilogue epilogue_;
  float lo_, hi_;
  std::vector<uint8_t> wpack_;
  std::vector<int32_t> init_;  // per column, padded to whole panels
  std::vector<float> mult_, bias_;
};

}  // namespace dlas

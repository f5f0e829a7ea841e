// oneDNN peer backend (DLAS layer 5, "vendor library" as a study dimension): runs an
// inferred graph through Debian's libdnnl (oneDNN 2.6), one oneDNN primitive per layer, so
// dlas's own engine can be compared with the vendor library on the same graph, in the
// same process.
//
// Lowering, done once at construction (run() only executes the prepared primitives):
// - Conv: BatchNormalization that follows a Conv is folded into its weights and bias;
//   a following chain of Relu / Clip / Sigmoid / HardSwish / SiLU (x * Sigmoid(x)) and one
//   residual Add becomes post-ops (eltwise, and sum for the Add); layouts are left to
//   oneDNN (format_tag::any, blocked nChw8c / nChw16c on AVX2 / AVX-512), weights are
//   reordered once, activations only when a consumer wants another layout.
// - BatchNormalization elsewhere (DenseNet's pre-activation): batch_normalization with
//   global statistics, ReLU fused when it follows.
// - MaxPool / AveragePool / GlobalAveragePool: pooling. Relu, Clip, Sigmoid, HardSwish,
//   SiLU: eltwise. Add / Mul (with broadcasting, the SE blocks): binary. Concat: concat.
//   Gemm with constant B: inner product (+ eltwise post-ops); MatMul and Gemm with a
//   runtime B: matmul. Softmax: softmax. Flatten / Reshape / Identity / Dropout: views of
//   a plain-layout buffer.
// - Any other op: dlas::Error kUnsupported naming the node.
//
// Threads: Debian's libdnnl is built with the OpenMP runtime (DNNL_CPU_RUNTIME ==
// DNNL_RUNTIME_OMP, libgomp). oneDNN sizes its work split from omp_get_max_threads() both
// when a primitive is created and when it runs, so the constructor and run() set the
// calling thread's OpenMP thread count to `threads` (omp_set_num_threads) and restore the
// previous value afterwards. Only the calling thread's setting is touched.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "dlas/model/graph.h"
#include "dlas/system/executor.h"

namespace dlas {

class OnednnExecutor : public Executor {
 public:
  // `graph` must be inferred. threads >= 1. Throws kUnsupported naming the node for an op
  // (or attribute) the backend cannot lower.
  explicit OnednnExecutor(const Graph& graph, int threads = 1);
  ~OnednnExecutor() override;
  OnednnExecutor(OnednnExecutor&&) noexcept;
  OnednnExecutor& operator=(OnednnExecutor&&) noexcept;

  // run(inputs) (Executor): one f32 tensor per graph input, in order, shapes exactly as
  // inferred (kInvalidInput naming the input otherwise); one tensor per graph output
  // (NCHW / plain). run_into copies the results into `outputs` (f32, the graph's output
  // shapes) and allocates nothing.
  void run_into(const std::vector<Tensor>& inputs, std::vector<Tensor>& outputs) override;

  std::string name() const override { return "onednn"; }
  const Graph& graph() const override;  // as given (oneDNN fuses on its own)
  int threads() const override;
  // oneDNN allocates its own buffers (scratchpads, reordered weights): only the graph's
  // weight bytes are reported, the other fields are kUnknownBytes.
  MemoryReport memory() const override;
  // One line per executed primitive: "<kind> <node>[+fused nodes] <impl>", in run order
  // (reorders included); shows what was fused and which oneDNN implementation runs.
  std::vector<std::string> describe() const;

  struct Impl;  // defined in the backend's translation unit (keeps dnnl headers there)

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace dlas

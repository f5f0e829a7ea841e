// The libtorch peer backend (DLAS layer 5): runs a dlas Graph with libtorch's CPU
// operators, node by node, as an independent implementation of the same ONNX
// semantics. It is the external truth the reference runtime is checked against and
// the peer the benchmarks compare with. This header deliberately includes no torch
// header; only src/torch/peer/*.cc see libtorch (target dlas_torch).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "dlas/model/graph.h"
#include "dlas/system/executor.h"

namespace dlas {

struct TorchPeerOptions {
  int num_threads = 0;  // intra-op threads for libtorch (at::set_num_threads); 0: leave as is
  // Computes every f32 value in double precision (outputs are rounded back to f32 at the
  // end): a high-precision oracle that tells which fp32 implementation is closer to exact.
  bool float64 = false;
};

// The ONNX op types the peer maps to libtorch operators, sorted.
const std::vector<std::string>& libtorch_mapped_ops();

// True when every node's op is mapped (every dlas dtype converts). Otherwise false, and
// *why (when given) names the first node at fault.
bool libtorch_supports(const Graph& graph, std::string* why = nullptr);

// A graph prepared for repeated runs: initializers are converted to torch tensors once.
// `graph` must be inferred. Throws kUnsupported naming the node when an op is not mapped.
// The "torch" Executor (make_executor knows it once register_torch_executor() ran).
class LibtorchRunner : public Executor {
 public:
  explicit LibtorchRunner(Graph graph, const TorchPeerOptions& options = {});
  ~LibtorchRunner() override;
  LibtorchRunner(LibtorchRunner&&) noexcept;
  LibtorchRunner& operator=(LibtorchRunner&&) noexcept;

  const Graph& graph() const override;
  // One tensor per graph input, in order (dtype and shape must match; kInvalidInput
  // naming the input otherwise). Returns one tensor per graph output, with the
  // graph's inferred dtype. Inputs are copied into torch tensors and outputs copied back.
  std::vector<Tensor> run(const std::vector<Tensor>& inputs) const;

  std::string name() const override { return "torch"; }
  // libtorch's intra-op threads (TorchPeerOptions::num_threads, or what libtorch had).
  int threads() const override;
  // libtorch holds its own copies of the weights: only the graph's weight bytes are
  // reported, the other fields are kUnknownBytes.
  MemoryReport memory() const override;
  // Replaces `outputs` with the results of run().
  void run_into(const std::vector<Tensor>& inputs, std::vector<Tensor>& outputs) override;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Adds "torch" (a LibtorchRunner with the Variant's threads) to make_executor's backends.
// Lives in dlas_torch, so only binaries that link libtorch can run it; idempotent.
void register_torch_executor();

// One-shot convenience: LibtorchRunner(graph, options).run(inputs).
std::vector<Tensor> run_with_libtorch(const Graph& graph, const std::vector<Tensor>& inputs,
                                      const TorchPeerOptions& options = {});

}  // namespace dlas

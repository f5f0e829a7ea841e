// Executors (DLAS layer 5): anything that runs a compiled model -- dlas's own Plan
// (plan.h), the oneDNN backend (onednn_backend.h), the reference runtime below and the
// libtorch runner (torch_peer.h, target dlas_torch). One interface, so that one latency
// protocol (measure.h) and one factory (make_executor.h) serve `dlas bench`, `dlas profile`,
// `dlas run`, the study and the tuner; a new backend is one more Executor
// (docs/engine-executors.md).
//
// This header stays light (no dnnl, no torch): every backend's library headers live in its
// own translation units.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "dlas/model/graph.h"

namespace dlas {

// Memory an executor holds, in bytes. kUnknownBytes: the backend cannot see that buffer
// (oneDNN's and libtorch's own allocations); a dlas Plan fills in every field.
inline constexpr int64_t kUnknownBytes = -1;
struct MemoryReport {
  int64_t arena_bytes = 0;          // the planned activation arena (peak activation memory)
  int64_t unplanned_bytes = 0;      // sum of all activation tensors (no reuse)
  int64_t weight_bytes = 0;         // graph initializers after passes
  int64_t packed_weight_bytes = 0;  // weights as packed by the chosen algorithms
  int64_t workspace_bytes = 0;      // largest per-step scratch
};
// What a backend that cannot see its own buffers reports: the graph's weight bytes, every
// other field kUnknownBytes.
MemoryReport graph_weight_memory(const Graph& graph);

class Executor {
 public:
  virtual ~Executor() = default;

  // The backend: "dlas", "onednn", "reference", "torch" (Variant::backend).
  virtual std::string name() const = 0;
  // The graph it runs (after its own passes, for a Plan): inputs, outputs, MACs.
  virtual const Graph& graph() const = 0;
  // Worker threads it runs with.
  virtual int threads() const = 0;
  // What it holds; fields it cannot see are kUnknownBytes (see each backend).
  virtual MemoryReport memory() const = 0;

  // Output tensors shaped for run_into: one per graph output, with its inferred dtype and
  // shape.
  virtual std::vector<Tensor> make_outputs() const;
  // Runs once. `inputs`: one tensor per graph input, in order, exact dtype and shape
  // (kInvalidInput naming the input otherwise). `outputs`: as make_outputs() made them.
  // Backends that run in place (dlas, oneDNN) write into those tensors and allocate
  // nothing; the others (reference, torch) replace them with freshly computed ones.
  // Not re-entrant: one run at a time per executor.
  virtual void run_into(const std::vector<Tensor>& inputs, std::vector<Tensor>& outputs) = 0;

  // Milliseconds the last run_into spent in kernels on an accelerator (CUDA events around
  // them, copies excluded); -1 for executors that run on the CPU.
  virtual double last_device_ms() const { return -1; }

  // Convenience: make_outputs() + run_into().
  std::vector<Tensor> run(const std::vector<Tensor>& inputs);
  // The MACs of graph() (what GFLOP/s are computed from).
  int64_t macs() const { return graph().macs(); }

 protected:
  Executor() = default;
  Executor(const Executor&) = default;
  Executor& operator=(const Executor&) = default;
  Executor(Executor&&) = default;
  Executor& operator=(Executor&&) = default;
};

// The reference runtime: interprets an inferred graph node by node with the reference
// kernels, freeing each intermediate after its last use. Single-threaded. memory() knows
// only the weights (intermediates come and go with the run).
class ReferenceExecutor : public Executor {
 public:
  // `graph` must be inferred; throws kUnsupported when an op has no reference kernel.
  explicit ReferenceExecutor(Graph graph);
  const Graph& graph() const override { return graph_; }
  // One tensor per graph input, in order; dtype and shape must match exactly
  // (kInvalidInput naming the input otherwise). Returns one tensor per graph output.
  std::vector<Tensor> run(const std::vector<Tensor>& inputs) const;

  std::string name() const override { return "reference"; }
  int threads() const override { return 1; }
  MemoryReport memory() const override;
  void run_into(const std::vector<Tensor>& inputs, std::vector<Tensor>& outputs) override;

 private:
  Graph graph_;
};

}  // namespace dlas

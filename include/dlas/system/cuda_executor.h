// The CUDA plan (DLAS layer 5, docs/gpu.md): a model compiled for one CUDA device. The graph
// passes run as for the CPU plan; every node then becomes one step on one stream -- dlas's
// own CUDA conv algorithms (dlas/algo/cuda_conv.h, or cuDNN for the "cudnn" backend) with
// their fused bias / residual / activation, and dlas's CUDA kernels for the other ops. The
// weights are uploaded once, the activations live in one device arena laid out by the
// memory planner, nothing is allocated in the hot path, and the steps are captured in one
// CUDA graph that each run replays.
//
// Declared everywhere; built only with the CUDA backend (DLAS_WITH_CUDA). Without it, or on
// a machine without a CUDA device, make_cuda_executor throws kUnsupported with one line.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "dlas/algo/knobs.h"
#include "dlas/system/executor.h"
#include "dlas/system/make_executor.h"
#include "dlas/system/plan.h"
#include "dlas/system/variant.h"

namespace dlas {

struct CudaPlanOptions {
  int device = 0;  // CUDA ordinal
  // A CUDA conv algorithm ("direct", "gemm", "winograd", "depthwise", with knob overrides
  // "gemm:tile=2"), "auto" (the untuned rule) or "cudnn" (every conv through cuDNN, the
  // classifier through cuBLAS: the vendor backend). Layers the named algorithm cannot run
  // use the auto rule.
  std::string conv_algo = "auto";
  // Per-layer choices (tuned records, --layers): an unknown node, a non-conv node or a CUDA
  // algorithm that does not support the layer is kInvalidInput.
  LayerChoices layers;
  int opt_level = 3;  // the graph passes' level; 0 also turns off arena reuse
  // The GPU machine profile the auto rule follows (cuda_profile.h active_cuda_profile): a
  // path, "none", or empty for this GPU's calibration cache.
  std::string profile;
  // Replay the steps as one CUDA graph (false: launch them one by one each run).
  bool cuda_graph = true;
  // The Executor's name(): "dlas" or "cudnn".
  std::string backend = "dlas";
};

// One step of the plan, for `dlas profile` and the tests.
struct CudaStepInfo {
  std::string node;   // graph node name
  std::string op;     // its op
  std::string algo;   // conv: the algorithm that ran ("gemm", "cudnn", ...); else the kernel
  Knobs knobs;        // conv: its knobs
  std::string shape;  // conv: ConvShape::str(); else the output shape
  int64_t macs = 0;
};

class CudaExecutor : public Executor {
 public:
  // `graph`: inferred, fp32 inputs and outputs. Throws kUnsupported naming the node for an
  // op or dtype with no CUDA kernel, kRuntime for CUDA failures.
  CudaExecutor(Graph graph, const CudaPlanOptions& options);
  ~CudaExecutor() override;

  std::string name() const override;
  const Graph& graph() const override;
  int threads() const override { return 1; }
  // Device bytes: arena (activations), weights as uploaded, the largest conv workspace.
  MemoryReport memory() const override;
  void run_into(const std::vector<Tensor>& inputs, std::vector<Tensor>& outputs) override;
  double last_device_ms() const override;

  const std::vector<CudaStepInfo>& steps() const;
  // "cuda:0 (NVIDIA H100 80GB HBM3, sm_90)".
  std::string device_label() const;
  // Whether the steps replay as one CUDA graph (false where capture was refused).
  bool graph_captured() const;
  // The GPU profile the auto rule followed (its path; empty: the hand-written rule only).
  const std::string& profile_path() const;
  // Per-step device times (CUDA events around each step, steps launched one by one), ms,
  // the median of `repeat` runs on the inputs of the last run_into (zeros before any).
  std::vector<double> profile_steps(int repeat);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// make_executor's path for a Variant whose device is "cuda:N": backend "dlas" (dlas's CUDA
// algorithms, Variant::conv_algo and options.layers) or "cudnn". kUnsupported for other
// backends, and where CUDA or the device is missing (one line: gpu_unavailable_reason()).
std::unique_ptr<Executor> make_cuda_executor(const Graph& graph, const Variant& variant,
                                             const ExecutorOptions& options);

}  // namespace dlas

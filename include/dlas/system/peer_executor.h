// The ONNX peers as Executors (DLAS layer 5): ONNX Runtime, OpenVINO, Apache TVM (default
// schedules, and MetaSchedule-tuned) and DeepSparse, each run by bench/peers/onnx_peers.py
// in a long-lived server process of the peers' virtual environment (.venv-peers, made by
// scripts/peers-setup.sh). The executor exports its graph -- pruned zeros, int8 as
// QuantizeLinear/DequantizeLinear, fp16 as it is -- to a private ONNX file, and the server
// compiles that once. `dlas bench/run/eval --backend onnxruntime` and the study's backend
// dimension reach them through make_executor.
//
// Finding a peer: $DLAS_PEERS_VENV (default: the source tree's .venv-peers) holds
// bin/python (DeepSparse: deepsparse/bin/python); $DLAS_PEERS_SERVER overrides the server
// script. tvm-tuned spends $DLAS_TVM_TRIALS MetaSchedule trials (default 64).
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "dlas/model/graph.h"
#include "dlas/system/measure.h"
#include "dlas/system/variant.h"

namespace dlas {

// The peer backends, in the order reports list them.
const std::vector<std::string>& peer_backends();
bool is_peer_backend(std::string_view backend);

// Why `peer` cannot run here, in one line naming the fix ("onnxruntime is not installed:
// run scripts/peers-setup.sh"), or "" when its interpreter and server script exist. Checks
// files only (importing the engine takes seconds): a broken install shows when it starts.
std::string peer_unavailable_reason(const std::string& peer);

// MetaSchedule trials tvm-tuned spends ($DLAS_TVM_TRIALS, default 64).
int tvm_tuned_trials();

class PeerExecutor : public RemoteTimedExecutor {
 public:
  // Exports `graph` (inferred) and has the peer compile it with `threads` intra-op
  // threads. kUnsupported with the peer's one-line reason when it is not installed or
  // cannot compile the model; kRuntime when its server dies.
  PeerExecutor(const Graph& graph, const std::string& peer, int threads);
  ~PeerExecutor() override;
  PeerExecutor(const PeerExecutor&) = delete;
  PeerExecutor& operator=(const PeerExecutor&) = delete;

  std::string name() const override { return peer_; }
  const Graph& graph() const override { return graph_; }
  int threads() const override { return threads_; }
  MemoryReport memory() const override { return graph_weight_memory(graph_); }
  // One run in the peer: inputs and outputs cross as .npy files (correct, not fast: timing
  // goes through measure_remote).
  void run_into(const std::vector<Tensor>& inputs, std::vector<Tensor>& outputs) override;
  // The latency protocol run inside the server on its own seeded inputs.
  LatencyStats measure_remote(const LatencyOptions& options) override;

  double compile_ms() const { return compile_ms_; }  // the peer's compile, tuning aside
  double tune_ms() const { return tune_ms_; }        // tvm-tuned: MetaSchedule's wall time
  int tune_trials() const { return tune_trials_; }
  std::string version() const { return version_; }
  std::string precision() const { return precision_; }  // OpenVINO's inference precision

 private:
  struct Server;
  Graph graph_;
  std::string peer_;
  int threads_;
  std::string dir_;         // private folder: the model and the .npy files of run_into
  std::string model_path_;  // dir_/model.onnx
  std::unique_ptr<Server> server_;
  double compile_ms_ = 0, tune_ms_ = 0;
  int tune_trials_ = 0;
  std::string version_, precision_;
};

}  // namespace dlas

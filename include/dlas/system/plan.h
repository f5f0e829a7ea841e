// The compiled plan (DLAS layer 5): a graph after the opt-level's passes, each
// node lowered to a step -- convolutions to a prepared algorithm (weights packed
// once, knobs fixed), other ops to fast kernels or, where none exists, the
// reference kernel -- and every tensor at a fixed offset in one arena laid out
// by a liveness-based memory planner. run() does no allocation and no string work
// besides the output tensors it returns (run_into() does none at all). A Plan is the
// "dlas" Executor (executor.h).
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "dlas/algo/conv.h"
#include "dlas/algo/knobs.h"
#include "dlas/algo/layout.h"
#include "dlas/hw/isa.h"
#include "dlas/model/graph.h"
#include "dlas/system/executor.h"
#include "dlas/system/passes.h"

namespace dlas {

struct MachineProfile;  // dlas/algo/machine_profile.h

// One layer's algorithm and knobs (knobs empty: the algorithm's default point), and the
// activation layout it was chosen on ("nchw", "nchw8c", "nchw16c"; empty: not said). Under
// --layout auto a blocked choice runs blocked and an "nchw" one NCHW; under nchwc a layer
// whose knobs fit its blocked kernel runs blocked whatever the choice says.
struct LayerChoice {
  std::string algo;
  Knobs knobs;
  std::string layout;
};
// Node name -> choice.
using LayerChoices = std::map<std::string, LayerChoice>;

// Reads {"<node>": {"algo": "winograd", "knobs": {"variant": 4, ...}, "layout": "nchw"}, ...}
// ("layout" optional).
// Throws kInvalidInput naming the file and the entry.
LayerChoices read_layer_choices(const std::string& path);
// Writes choices in that form (2-space indented, nodes sorted), atomically (dlas/core/file.h).
void write_layer_choices(const std::string& path, const LayerChoices& choices);

// How the plan lays out activations (docs/engine.md "Data layouts"):
//   nchw:  every layer NCHW (no blocked kernels);
//   nchwc: every layer with a blocked implementation runs on the ISA's blocked layout
//          (nchw16c on AVX-512, nchw8c on AVX2), reorders only where a layer lacks one;
//   auto:  blocked where the auto rule expects a blocked kernel to win (per conv), the
//          layers between following their inputs.
enum class LayoutMode : int { kNchw, kNchwc, kAuto };
const char* layout_mode_name(LayoutMode m);  // "nchw", "nchwc", "auto"
// Inverse of layout_mode_name; throws kUsage naming the allowed values.
LayoutMode parse_layout_mode(std::string_view name);
// Whether a 16-bit conv (a problem of f16 / bf16 values, its layouts unset) runs on 16-bit
// blocks (nchw16c) under layout mode m on path isa when some algorithm has a blocked
// implementation for it: under nchwc on AVX-512 paths; under auto for bf16 where it runs
// natively on blocks, below AMX (the layout pass; the tuner tunes such layers blocked).
bool half_conv_runs_blocked(const ConvProblem& p, LayoutMode m, Isa isa);
// The same for an int8 conv on 8-bit blocks (nchw16c), on paths with the blocked int8
// kernels (AVX512-VNNI and above): under nchwc; under auto with u8 input where `profile`
// (the plan's machine profile, may be null) has an int8 entry for the class whose blocked
// candidate wins, and without an entry below AMX. Stems (<= 4 input channels, one group)
// stay NCHW in every mode (the layout pass).
bool int8_conv_runs_blocked(const ConvProblem& p, LayoutMode m, Isa isa,
                            const MachineProfile* profile = nullptr);

struct PlanOptions {
  // An algorithm name (conv_algorithm_names()) or "auto". Layers the named
  // algorithm does not support use the auto rule (steps() says which ran).
  std::string conv_algo = "auto";
  // Per-layer overrides; an unknown node, a non-conv node or an algorithm that
  // does not support the layer is an error (kInvalidInput).
  LayerChoices layers;
  int threads = 1;         // <= 0: one per logical processor
  int opt_level = 3;       // optimize_graph's levels; 0 also turns off arena reuse
  std::optional<Isa> isa;  // default: active_isa()
  // Activation layouts. Layers with a per-layer choice (layers, records) run NCHW unless
  // the mode is nchwc and their algorithm has a blocked implementation.
  LayoutMode layout = LayoutMode::kAuto;
  // Machine profile (docs/engine.md "Machine profile"): a path, "none", or empty for
  // $DLAS_PROFILE, then the calibration cache (dlas/algo/machine_profile.h).
  std::string profile;
};

// What one step runs.
struct StepInfo {
  std::string node;    // graph node name
  std::string op;      // "FusedConv", "MaxPool", ...
  std::string kernel;  // algorithm ("winograd"), fast kernel ("fast") or "reference"
  std::string knobs;   // knobs_to_string, conv steps only
  int64_t macs = 0;
  // The layout the step writes its output in; "Reorder" steps (inserted by the layout
  // pass, node "<value>@<layout>") convert one value between layouts.
  Layout layout = Layout::kNchw;
  // The arithmetic a conv step runs (conv_compute_name: "f32", "int8", "amx-int8",
  // "emulated", "native-fp16", "native-bf16", "amx-bf16"); "f32" for every other step.
  std::string compute = "f32";
};

class Plan : public Executor {
 public:
  // `graph` must be inferred. Throws kInvalidInput / kUnsupported naming the node.
  Plan(Graph graph, const PlanOptions& options);
  ~Plan() override;
  Plan(Plan&&) noexcept;
  Plan& operator=(Plan&&) noexcept;

  // Inputs in graph order with exact dtype and shape (kInvalidInput otherwise); outputs
  // as make_outputs() makes them (Executor, as is run()). No allocation. Not re-entrant:
  // one run at a time per plan.
  void run_into(const std::vector<Tensor>& inputs, std::vector<Tensor>& outputs) override;
  // Like run_into, adding each step's wall time in seconds to step_seconds
  // (resized to steps().size()).
  void run_profiled(const std::vector<Tensor>& inputs, std::vector<Tensor>& outputs,
                    std::vector<double>& step_seconds);

  std::string name() const override { return "dlas"; }
  const Graph& graph() const override;  // after the passes
  const PassReport& pass_report() const;
  const std::vector<StepInfo>& steps() const;
  MemoryReport memory() const override;  // every field known
  Isa isa() const;
  int threads() const override;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace dlas

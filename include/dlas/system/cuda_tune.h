// Tuning on a GPU (DLAS layer 5, docs/gpu.md "Tuning"): `dlas tune --device cuda` searches
// the knobs of dlas's CUDA conv algorithms (dlas/algo/cuda_conv.h) layer by layer, with the
// CPU tuner's cost discipline: each algorithm's default point first, algorithms whose
// default is far slower than the layer's best default left cold (not searched), the others'
// knob spaces walked in a seeded random order until `patience` points in a row bring no
// gain or the budget ends. Candidates run alone on the device, timed with CUDA events. The
// records are the CPU tuner's (dlas/system/tune.h Record), keyed by the GPU's name and
// architecture, so `--records FILE --device cuda` applies them on any model with the same
// layers on the same GPU model.
//
// Declared everywhere; with no CUDA backend or device, tune_cuda throws kUnsupported.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "dlas/model/graph.h"
#include "dlas/system/plan.h"
#include "dlas/system/tune.h"

namespace dlas::tune {

struct CudaTuneOptions {
  int device = 0;
  int opt_level = 3;
  double budget_seconds = 0;  // 0: none
  int64_t budget_trials = 0;  // 0: none
  int patience = 12;          // points in a row without a 1% gain that end an algorithm's walk
  double cold_factor = 3.0;   // algorithms whose default is slower than this x the best default
  int repeat = 5;             // timed repeats per candidate (median)
  uint64_t seed = 0;          // the walk order
  std::function<void(const Record&)> on_record;  // every candidate as it is measured
  // After each layer: layers done, layers in all, seconds so far.
  std::function<void(int done, int total, double seconds)> on_layer;
};

struct CudaTuneReport {
  int layers = 0;  // unique conv layers (shape + epilogue)
  int convs = 0;   // conv nodes they cover
  int64_t trials = 0, failures = 0, cold_algorithms = 0;
  double seconds = 0;
  // The layers' summed best time (each layer times its nodes) after each trial: (seconds,
  // ms). seconds_to_95: when it first came within 5% of the final sum (Felix's measure).
  std::vector<std::pair<double, double>> curve;
  double seconds_to_95 = 0;
  double untuned_ms = 0, tuned_ms = 0;  // the whole model's kernel time, auto rule vs tuned
  std::vector<Record> records;
  LayerChoices choices;                // per conv node: the fastest candidate of its layer
  std::map<std::string, int> winners;  // algorithm -> layers it won (observation VIII)
};

// Tunes every f32 conv layer of `graph` (before passes; optimized here at opt_level) on
// CUDA device options.device.
CudaTuneReport tune_cuda(const Graph& graph, const CudaTuneOptions& options);

// "NVIDIA H200|sm_90": the Record::hardware of GPU tuning records.
std::string cuda_hardware_id(int device);

// The per-node choices GPU records give `graph` (before passes) on `device`: each conv node
// whose layer has an ok record of this GPU model runs the fastest one. *matched / *convs:
// nodes matched and conv nodes in all.
LayerChoices apply_cuda_records(const Graph& graph, int opt_level, int device,
                                const std::vector<Record>& records, int* matched = nullptr,
                                int* convs = nullptr);

}  // namespace dlas::tune

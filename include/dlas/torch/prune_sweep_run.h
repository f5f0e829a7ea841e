// Running the paper's iterative prune-and-fine-tune sweep (DLAS Section 5.3) with libtorch:
// the producer of sweep.json (dlas/optimize/prune_sweep.h). Level i prunes the fine-tuned
// model of level i-1 further and fine-tunes it for its share of the total epochs; every
// accuracy is measured by the dlas engine on the test split.
//
//   PruneSweepOptions o;
//   o.dataset = "fashion-mnist";
//   o.method = PruneMethod::kWeight;
//   o.levels = default_sweep_levels(o.method);
//   o.epochs = 3;  // in all, shared evenly across the levels
//   o.dir = "sweeps/resnet18-weight";
//   SweepResult r = run_prune_sweep(load_model("resnet18.onnx"), o);
//
// Weight pruning: wp:level (global magnitude) on the fine-tuned model; its zeros become the
// trainer's masks, so pruned weights stay zero. Channel pruning (cp) removes channels
// physically, so each level removes the fraction of the channels that remain which brings the
// total removed to round(level x the ORIGINAL prunable channels); SweepPoint::achieved is
// measured against the original count.
//
// This header includes no torch header; the implementation is in src/torch/train/ (dlas_torch).
#pragma once

#include <atomic>
#include <filesystem>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "dlas/model/graph.h"
#include "dlas/optimize/prune_sweep.h"
#include "dlas/torch/train.h"

namespace dlas {

struct PruneSweepOptions {
  std::string model;    // recorded in sweep.json (zoo name or .onnx path as given)
  std::string dataset;  // dataset name (dlas/data/dataset.h)
  PruneMethod method = PruneMethod::kWeight;
  std::vector<double> levels;  // ascending, in (0, 1); empty: default_sweep_levels(method)
  double epochs = 1;           // total fine-tuning epochs, shared evenly across the levels
  // Fine-tuning: lr, schedule, batch, threads, limit, augment, seed, on_progress are used;
  // epochs, max_steps, preprocess, masks and stop are set per level. Level i trains with
  // seed + 1 + i (another data order for each fraction of an epoch).
  TrainOptions train;
  int64_t test_limit = 0;                   // test records each accuracy is measured on (0: all)
  int64_t eval_batch = 100;                 // engine batch of the accuracy runs
  double tolerance = 0.01;                  // elbow tolerance (top-1 fraction)
  std::string calibrator = "auto";           // int8:<calibrator> of baseline_quant / elbow_quant
  bool quant = true;                        // measure baseline_quant and elbow_quant
  std::filesystem::path dir;                // output directory (created; files replaced)
  const std::atomic<bool>* stop = nullptr;  // raised (SIGINT): keep the finished levels
  // Continue the sweep in `dir` (interrupted by `stop`, a crash or a kill): its sweep.json must
  // have been made with the same settings (sweep_settings(); kInvalidInput naming the first
  // that differs, or when dir has no sweep.json). The finished levels are kept, the next level
  // starts from the last finished level's model, and the result is what an uninterrupted run
  // gives (bit for bit at one thread, apart from the timings). `baseline` is then only used
  // when no level was finished (it must be the same model; dir/baseline.onnx is).
  bool resume = false;
  // Settings of the caller recorded beside sweep_settings()'s (the CLI: "model-hash" of the
  // model file, "train-epochs" of a zoo baseline, ...); --resume compares them too.
  std::map<std::string, std::string> settings;
  std::function<void(const std::string&)> on_line;  // one progress line per step / level
};

struct PruneSweepRun {
  SweepResult result;    // as written to dir/sweep.json
  bool stopped = false;  // interrupted by `stop`: result holds the levels finished before
};

// The prunable channel count and the spec that prunes `graph` (which has `removed` of the
// original `original` prunable channels removed already) to `level` of the original: the
// fraction of what remains, 1 - (1 - level) / (1 - prev), from exact channel counts.
PruneSpec channel_step_spec(int64_t original, int64_t remaining, double level);

// Runs the sweep on a trained `baseline` (inferred, BatchNormalization not folded; its input
// takes the dataset's preprocessed images and its first output gives the dataset's classes:
// kInvalidInput naming the shapes otherwise). Writes dir/baseline.onnx, one model per level
// (e.g. weight-0.90.onnx), elbow.onnx, curve.csv and, after each level and last,
// dir/sweep.json (temp file + rename; only naming files already written).
PruneSweepRun run_prune_sweep(const Graph& baseline, const PruneSweepOptions& options);

// The settings recorded in sweep.json (SweepResult::settings) and compared by `resume`: model,
// dataset, method, levels, epochs, lr, schedule, batch, limit, no-augment, seed,
// label-smoothing, test-limit, eval-batch, tolerance, calibrator, quant, plus options.settings.
// Keys are the CLI's option names without "--"; values are exact decimal text.
std::map<std::string, std::string> sweep_settings(const PruneSweepOptions& options);

// File name of a level's model: "weight-0.90.onnx", "channel-0.05.onnx", "weight-0.995.onnx".
std::string sweep_model_file(PruneMethod method, double level);

// curve.csv: a header and one row per point, the baseline first.
std::string sweep_curve_csv(const SweepResult& r);

}  // namespace dlas

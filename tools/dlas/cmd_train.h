// `dlas train` and `dlas prune-sweep`: bin/dlas parses and checks their flags (cmd_train.cc,
// cmd_prune_sweep.cc) and execs bin/dlas-train, whose tools/dlas-train/*.cc run them with
// libtorch.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "cli.h"

#ifdef DLAS_HAVE_TORCH
#include "dlas/data/dataset.h"
#include "dlas/torch/prune_sweep_run.h"
#include "dlas/torch/train.h"
#endif

namespace dlas::cli {

struct TrainArgs {
  std::string model;
  std::string dataset = "fashion-mnist";
  double width_mult = 1.0;
  double epochs = 1;  // fractions allowed: round(epochs x steps per epoch) steps
  int64_t batch = 128;
  double lr = 0.05;
  std::string schedule = "onecycle";
  double label_smoothing = 0;
  int64_t limit = 0;
  int64_t test_limit = 0;
  int threads = 1;
  uint64_t seed = 0;
  std::string checkpoint;
  bool resume = false;
  bool json = false;
  bool no_augment = false;
  std::string output;
  PreprocessArgs preprocess;
};

struct SweepArgs {
  std::string model;
  std::string dataset = "fashion-mnist";
  std::string method;
  std::string levels;  // comma list; empty: the paper's levels
  double epochs = 1;   // total fine-tuning epochs
  double lr = 0.01;
  std::string schedule = "cosine";
  double label_smoothing = 0;
  int64_t batch = 128;
  int64_t limit = 0;
  int64_t test_limit = 0;
  double tolerance = 1.0;  // top-1 points
  std::string calibrator = "auto";
  int threads = 1;
  uint64_t seed = 0;
  int train_epochs = 0;  // zoo models: train the baseline first
  double train_lr = 0.05;
  double width_mult = 1.0;
  bool no_augment = false;
  bool json = false;
  bool force = false;
  bool resume = false;  // continue the interrupted sweep in `output`
  std::string output;
  PreprocessArgs preprocess;
};

// --levels as numbers (the method's default levels when empty); kUsage naming the flag.
std::vector<double> sweep_levels_from_args(const SweepArgs& args);
// Everything checkable without libtorch, so bad input fails before the exec.
void check_sweep_args(const SweepArgs& args);

#ifdef DLAS_HAVE_TORCH
// bin/dlas-train: the runs (tools/dlas-train/train.cc, prune_sweep.cc); the exit code.
int run_train(const TrainArgs& args);
int run_sweep(const SweepArgs& args);
// What `dlas train` trains: a zoo model built for the dataset's images and classes, or the
// ONNX file, carrying the preprocessing in force (flags > its metadata > the dataset's default,
// dlas/system/preprocess_meta.h; one warning line for an ONNX file without either); and how
// (tools/dlas-train/train.cc). prune-sweep trains its zoo baselines so.
Graph model_to_train(const TrainArgs& args, const data::DatasetInfo& info);
// The options for training `model` (model_to_train's: its metadata holds the preprocessing).
TrainOptions train_options(const TrainArgs& args, const data::DatasetInfo& info,
                           const Graph& model, const std::atomic<bool>* stop,
                           std::function<void(const TrainProgress&)> on_progress);
// Prints a finished sweep: sweep.json's object plus dir, stopped and seconds (--json), or its
// table and a summary line (tools/dlas-train/prune_sweep_report.cc).
void print_sweep(const SweepArgs& args, const PruneSweepRun& run, double seconds);
// The trainer's progress (tools/dlas-train/train.cc): a bar on a TTY (dlas/core/progress.h),
// plain "train: ..." lines about every tenth of an epoch otherwise.
std::function<void(const TrainProgress&)> train_progress_printer(bool tty);
#endif

}  // namespace dlas::cli

// `dlas tune` and `dlas records` (cmd_tune.cc: flags; cmd_tune_run.cc: the run;
// cmd_tune_report.cc: its report; cmd_records.cc: `records best`).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "cli.h"
#include "dlas/system/tune.h"

namespace dlas::cli {

struct TuneArgs {
  std::string budget = "120s";
  std::string strategy = "evolutionary";
  std::string mode = "survey";
  int task_trials = 0;
  int patience = 24;
  std::string out;
  std::string choices;
  std::string cost_model = "xgboost";
  double phi = 5e-4;
  double goal_ms = 0;
  double timeout_s = 1.0;
  uint64_t tune_seed = 0;
  int batch = 4;
  int repeat = 5;
  int confirm_rounds = 5;
  std::string cache = "model";
  bool no_filter = false;
  bool json = false;
};

// What the report says besides the tuner's own TuneReport.
struct TuneRun {
  std::string compress;
  std::vector<tune::Task> tasks;
  size_t layers = 0;  // conv layer shapes the tasks cover
  double reuse_bytes = 0;
  tune::TuneReport report;
};

// Prints the report of a run: one JSON object (--json) or three lines (cmd_tune_report.cc).
void print_tune_report(const std::string& model, const TuneArgs& args, const TuneRun& run);

// Tunes the model, writes the records (and choices), prints the report; the exit code.
int run_tune(const ModelArgs& model, const EngineArgs& engine, const TuneArgs& args);
// --device cuda: the GPU tuner (cmd_tune_cuda.cc).
int run_cuda_tune(const ModelArgs& model, const EngineArgs& engine, const TuneArgs& args);

// `dlas records best`.
void add_records_command(CLI::App& app, Action& run);

}  // namespace dlas::cli

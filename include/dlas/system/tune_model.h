// Tuning a whole model in one call (DLAS layer 5): the pieces `dlas tune` and the study's
// `tuning = ["tuned:120s"]` dimension share -- budget parsing, whole-model re-timing, and
// the task set of a model restricted to one algorithm.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "dlas/model/graph.h"
#include "dlas/system/plan.h"
#include "dlas/system/tune.h"

namespace dlas::tune {

struct Budget {
  double seconds = 0;  // 0: unlimited
  int64_t trials = 0;  // 0: unlimited
};
// "120s", "2m", "500trials", or both joined by ',' ("120s,500trials"). Throws kUsage with a
// message that quotes `text` and says what is expected.
Budget parse_budget(std::string_view text);

// How whole-model latency is timed. A 2-core VM shared with other jobs drifts by tens of
// percent over seconds, so: `blocks` blocks of runs, each block's runs grown until it
// lasts `block_seconds` (min_runs..max_runs runs: more runs for short models), the median
// of each block (drops the odd preempted run), then the median over blocks. (The minimum
// over blocks, min_over_blocks, picks lucky quiet stretches: measured on this machine under
// sustained load it doubled the spread -- bench/tune_timing.cc.)
struct TimeOptions {
  int blocks = 4;
  double block_seconds = 0.04;
  int min_runs = 1;
  int max_runs = 200;
  bool min_over_blocks = false;  // true: the minimum of the block medians
};

// Whole-model latency in seconds: `graph` compiled with `options` and these layer choices,
// one warm-up run, then the blocks of TimeOptions.
double time_model(const Graph& graph, PlanOptions options, const LayerChoices& choices,
                  const TimeOptions& t = {});
// The previous rule, kept for the stability comparison (bench/tune_timing.cc): one warm-up,
// then the median of 5 to 30 runs (at most ~200 ms of runs).
double time_model_median(const Graph& graph, PlanOptions options, const LayerChoices& choices);

// The records that pin the tuner's whole-model pick (rep.choices, timed as a whole; the
// per-layer fastest records need not compose into it): per conv layer of `graph` compiled
// with `options` and those choices (the auto rule's, where a layer has none), a chosen
// record (Record::chosen) of the task and knobs the layer runs, with that candidate's
// timings from rep.records, or timed now with `m` where the search never timed it. Written
// after the search's records, they make --records reproduce the tuned model.
std::vector<Record> chosen_records(const Graph& graph, PlanOptions options,
                                   const std::vector<Task>& tasks, const TuneReport& rep,
                                   Measurer& m, double timeout_seconds);

// A model's reuse distance, for MeasureOptions::reuse_bytes: the packed weights plus the
// activation arena of `graph` compiled with `options` (the auto rule's plan).
double model_reuse_bytes(const Graph& graph, const PlanOptions& options);

// The tuner's whole-model timer (TuneOptions::model_latency): every timing is paired with
// one fixed reference, so drift between two timings taken seconds apart cannot pass for
// progress. The first call times its choices alone (time_model) and makes them the
// reference (the tuner's first call is the untuned model). Every later call compiles the
// candidate and times it and the reference in alternating blocks (A B, B A, A B, ...: each
// block the median of its runs, as time_model), and returns the reference's latency x
// (candidate's combined block medians / reference's). The reference stays fixed: pairing
// with the best model so far instead chains ratios, and the noise of every accepted
// "win" compounds (measured: a 1.6x claimed speedup that bench showed as 1.07x). A
// candidate that looks faster than every earlier one is timed a second time and keeps the
// slower ratio of the two (a lucky timing must not set the curve's minimum). Choices equal
// to the previous call's return its value (the same plan).
class ModelTimer {
 public:
  ModelTimer(const Graph& graph, PlanOptions options, TimeOptions t = {});
  ~ModelTimer();
  double operator()(const LayerChoices& choices);
  // Candidate / reference time ratio from one paired measurement (changes nothing; needs a
  // first call). Compiles the candidate even when its choices equal the reference's.
  double compare(const LayerChoices& choices);
  double reference_latency() const { return reference_latency_; }

  struct Compiled;  // a compiled plan with its inputs and outputs (tune_model.cc)

 private:
  Graph graph_;
  PlanOptions options_;
  TimeOptions t_;
  std::unique_ptr<Compiled> reference_;
  double reference_latency_ = 0;
  LayerChoices last_choices_;
  double last_latency_ = 0;
  double best_ratio_ = 1;  // the fastest confirmed candidate / reference so far
};

// The tasks of extract_tasks, keeping only algorithm `algo` (an algorithm name; "auto" or
// "" keeps all). Layers `algo` cannot run keep no task: the auto rule runs them untuned.
std::vector<Task> tasks_for_algorithm(std::vector<Task> tasks, std::string_view algo);

}  // namespace dlas::tune

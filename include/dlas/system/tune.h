// The auto-tuner (DLAS layer 5): makes 'tuned' a cheap, routine study dimension.
//
//  * Tasks: the unique (conv problem, algorithm, format, dtype, ISA, threads) of a compiled
//    model, each with its knob space, its weight (occurrences) and the layer's real weights
//    (so sparse candidates see the real sparsity pattern).
//  * Measurement: a candidate (task, knobs) runs its layer in isolation, warm-up + repeats,
//    median; throws and timeouts are recorded as the candidate's error, never fatal.
//  * Records: JSON Lines like TVM's tuning logs; the best record per task becomes a
//    LayerChoice wherever a model has a layer with that task key (transfer-tuning).
//  * Search: random, grid, or Ansor-like evolutionary search ranked by a cost model
//    (XGBoost, trained online on knob + problem features -> log cost), a task scheduler
//    giving trials to the layers with the largest expected gain in model latency.
//  * Trimmer's cost discipline: cold-candidate filtering (predicted slow, or close to a
//    measured cold candidate; exploration decays as the model ranks better) and survey
//    tuning (rounds of small batches over all tasks, the whole model re-timed after each,
//    stopping when the improvement per tuning second falls below phi, a latency goal or
//    a budget is met).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "dlas/algo/conv.h"
#include "dlas/algo/knobs.h"
#include "dlas/hw/isa.h"
#include "dlas/model/graph.h"
#include "dlas/system/plan.h"

namespace dlas::tune {

// ---- tasks -------------------------------------------------------------------------------

// A conv's weights, owned: a task keeps its first node's (dlas/algo/conv.h ConvWeights).
struct TaskWeights {
  std::vector<uint8_t> data;      // [K][C/g][KH][KW] of the problem's w_type
  std::vector<float> bias;        // f32 [K] (f32 and 16-bit problems), empty when none
  std::vector<int32_t> bias_s32;  // int8: s32 [K], empty when none
  std::vector<float> w_scale;     // int8: [K]
  ConvWeights view() const;
};

struct Task {
  // "conv2d|c64_h32_..._g1|winograd|nchw|f32|avx2|t2" (+"_d0.10" in the layer for pruned
  // weights; int8 and 16-bit problems carry their types in the layer and the dtype field;
  // the format field is the layout, task_key): stable across models and runs; records match
  // on it.
  std::string key;
  // The layer group: the NCHW problem's layer_key; the tasks of one layer's every algorithm
  // and layout share it, and the fastest of them is the layer's choice.
  std::string layer;
  std::string algo;
  ConvProblem problem;  // with its element types and layouts (int8: and quantization)
  // An NCHW task of a layer that could run blocked (--layout auto): the blocked layout its
  // neighbours hand it. It is timed with the reorders running NCHW costs there (its input
  // and residual from that layout, its output back), so its cost compares with the
  // blocked tasks' as the plan will run them.
  Layout between = Layout::kNchw;
  // Its input is the model's (NCHW) input: between blocked neighbours only its output is
  // reordered.
  bool reads_image = false;
  Isa isa = Isa::kScalar;
  int threads = 1;
  KnobSpace space;
  Knobs defaults;
  std::vector<std::string> nodes;              // conv nodes of the optimized graph with this layer
  int weight = 1;                              // nodes.size()
  double density = 1.0;                        // nonzero share of the weights (f32)
  std::shared_ptr<const TaskWeights> weights;  // the first node's

  // "f32", "int8", "f16" or "bf16": the key's dtype field.
  std::string dtype() const;
  bool int8() const { return problem.is_int8(); }
  bool half() const { return problem.is_half(); }
  // The layout the layer runs on when this task is chosen: "nchw", "nchw8c" or "nchw16c".
  std::string layout() const { return layout_name(problem.y_layout); }
};

// The task key of one (problem, algorithm) on an ISA and thread count, for every element
// type: "conv2d|<layer_key>|gemm|<format>|<dtype>|avx2|t2". The format is the problem's
// output layout ("nchw", "nchw8c", "nchw16c"), or "nchw@nchw8c" for an NCHW task timed
// between blocked neighbours (Task::between).
std::string task_key(const ConvProblem& p, std::string_view algo, Isa isa, int threads,
                     double density = 1.0, Layout between = Layout::kNchw);
// Layer group key: the problem key, the fused epilogue (activation, "_res" -- part of an
// int8 key already --, "_nobias") and, below 0.95, a 2-decimal density suffix (a pruned
// layer's best schedule differs).
std::string layer_key(const ConvProblem& p, double density = 1.0);

// The tasks of a model as Plan(graph, options) would compile it: `graph` is the model
// before passes (optimized here on a copy at options.opt_level); every f32 conv node with
// constant weights gives one task per algorithm that supports it (sparse algorithms only
// where density <= max_sparse_density) -- where the ISA has a blocked layout and some
// algorithm runs the layer blocked, under options.layout nchwc the blocked tasks only and
// under auto the blocked tasks and the NCHW ones timed between blocked neighbours
// (Task::between) --, every int8 QFusedConv with constant weights one
// per int8 algorithm (qconv.h) that supports it, every f16 / bf16 conv node with
// constant weights one per 16-bit algorithm (hconv.h) that supports it. Order: by layer,
// in graph order.
std::vector<Task> extract_tasks(const Graph& graph, const PlanOptions& options,
                                double max_sparse_density = 0.6);

// ---- measurement -------------------------------------------------------------------------

struct MeasureResult {
  std::vector<double> costs;  // seconds per run, one per repeat (empty on error)
  std::string error;          // empty: ok
  double seconds = 0;         // wall time the measurement took (prepare included)
  bool ok() const { return error.empty() && !costs.empty(); }
  double cost() const;  // median of costs (+inf when !ok())
};

class Measurer {
 public:
  virtual ~Measurer() = default;
  // Must not throw for a bad candidate: the error goes into the result.
  virtual MeasureResult measure(const Task& task, const Knobs& knobs) = 0;
  // Times candidates against each other: `rounds` rounds, each timing every candidate once
  // in turn, so a slow stretch of a shared machine hits them all; one cost per round.
  // The tuner's confirmation of each layer's finalists (the winner's curse: the fastest of
  // many noisy timings is biased low). Default: measure() per candidate and round.
  virtual std::vector<MeasureResult> measure_interleaved(const std::vector<const Task*>& tasks,
                                                         const std::vector<Knobs>& knobs,
                                                         int rounds);
};

struct MeasureOptions {
  int warmup = 1;
  int repeat = 5;
  double min_repeat_seconds = 5e-4;  // runs per repeat grow until a repeat lasts this long
  double timeout_seconds = 1.0;      // a candidate whose run exceeds it is a failure
  uint64_t seed = 0;                 // the random input
  // The cache state a layer meets inside its model. Between two runs of one layer the
  // model touches every other layer's packed weights and activations, so its weights come
  // from wherever that much traffic leaves them (L3, or DRAM once the model outgrows the
  // LLC). With reuse_bytes > 0 the candidate is prepared in enough copies that their
  // packed weights together exceed reuse_bytes (at most max_copies), and consecutive runs
  // cycle through them. 0: one copy, its weights warm in cache from run to run -- an
  // isolated benchmark's ideal, which at 2 threads favoured algorithms whose packed
  // weights are large (Winograd's transformed U) and picked schedules that lost inside
  // the model (the tuner's own whole-model timing and `dlas bench` disagreed).
  double reuse_bytes = 0;
  int max_copies = 256;
};
// (tune_model.h: model_reuse_bytes gives a model's reuse distance.)

// Prepares the task's algorithm with the knobs on its real weights and times it alone
// on a pool of task.threads threads (input: seeded N(0,1)).
std::unique_ptr<Measurer> make_conv_measurer(const MeasureOptions& options);

// Runs measurer.measure with exceptions captured and the wall time checked: a candidate
// that throws or takes longer than timeout_seconds comes back as an error.
MeasureResult measure_safely(Measurer& m, const Task& task, const Knobs& knobs,
                             double timeout_seconds);

// ---- records -----------------------------------------------------------------------------

struct Record {
  std::string task;  // Task::key
  std::string algo;
  Knobs knobs;
  std::vector<double> costs;  // seconds
  std::string error;          // empty: ok
  std::string timestamp;      // ISO 8601 UTC
  std::string version;        // dlas version (git sha)
  std::string hardware;       // cpu model | isa | threads
  // The tuner's whole-model pick for the task's layer (layers timed alone do not always
  // compose): a chosen record beats faster ones of its layer (best_records,
  // choices_from_best). Its costs repeat its candidate's measurements.
  bool chosen = false;
  bool ok() const { return error.empty() && !costs.empty(); }
  double cost() const;  // median, +inf when !ok()
};

std::string record_to_json(const Record& r);  // one line, no newline
// Throws kInvalidInput naming `where` (file:line) and the field.
Record record_from_json(std::string_view line, std::string_view where = "record");
// Reads a JSON Lines file (blank lines skipped). Throws kInvalidInput naming file:line.
std::vector<Record> read_records(const std::string& path);
// Writes all records (temp file + rename: never half-written).
void write_records(const std::string& path, const std::vector<Record>& records);
// Appends one line and flushes (the tuner's live log).
void append_record(const std::string& path, const Record& r);

// The best ok record per task key (ties: the earliest), in first-seen task order. Records
// of the same candidate (task key and knobs) are pooled first into one record whose costs
// are their medians (one per record), so a re-timing outvotes a lucky first timing. A
// chosen record marks its candidate chosen (its costs count only when it is the
// candidate's first record), and a task's chosen candidate is its best.
std::vector<Record> best_records(const std::vector<Record>& records);

// "AMD EPYC 7B13|avx2|t2"; the current machine.
std::string hardware_id(Isa isa, int threads);
std::string now_iso8601();
std::string dlas_version();

// The layer choices the records give a model (graph before passes, as for extract_tasks):
// for every conv node, the fastest ok record among the keys of the algorithms that support
// it (records from any model: transfer). Records whose knobs are no longer valid are
// skipped. Nodes with no record are left out (the auto rule runs them).
struct AppliedRecords {
  LayerChoices layers;
  int matched_nodes = 0, conv_nodes = 0;
};
AppliedRecords apply_records(const Graph& graph, const PlanOptions& options,
                             const std::vector<Record>& records);

// ---- cost model ----------------------------------------------------------------------------

// Features of a candidate: problem features, the algorithm (one-hot over every conv
// algorithm) and each knob value (log2 of |v|+1, by a fixed global knob index; missing:
// NaN).
std::vector<float> candidate_features(const Task& task, const Knobs& knobs);
size_t feature_count();

class CostModel {
 public:
  virtual ~CostModel() = default;
  // Trains from scratch on rows (feature_count() columns) -> log(cost).
  virtual void fit(const std::vector<std::vector<float>>& x, const std::vector<double>& y) = 0;
  // Predicted log(cost); before any fit, all equal.
  virtual std::vector<double> predict(const std::vector<std::vector<float>>& x) const = 0;
  virtual std::string name() const = 0;
};
// "xgboost" (when built with it) or "knn" (k-nearest neighbours; the fallback).
std::unique_ptr<CostModel> make_cost_model(const std::string& kind = "xgboost", uint64_t seed = 0);
bool have_xgboost();

// Pairwise ranking accuracy: the share of pairs (i, j) in the same group with
// actual[i] != actual[j] that `predicted` orders the same way. 0.5 when no pair.
double ranking_accuracy(const std::vector<double>& predicted, const std::vector<double>& actual,
                        const std::vector<int>& group);

// ---- search ----------------------------------------------------------------------------------

enum class Strategy { kRandom, kGrid, kEvolutionary };
Strategy parse_strategy(std::string_view s);  // kUsage on an unknown name
const char* strategy_name(Strategy s);

// How trials are spread over the tasks.
//  * kSurvey (Trimmer): rounds of small batches over all tasks, the whole model re-timed
//    after each round, early stop by phi (should_stop_early).
//  * kSequential (the AutoTVM / Ansor per-layer baseline): every task's default point
//    first (the untuned model, as in survey), then the tasks one after another, in graph
//    order; a task stops after `patience` trials without a new best (better by more than
//    1%, above measurement noise), at `task_trials` trials, or when its space is used up.
//    The whole model is re-timed after each layer (a checkpoint of the curve) and at the
//    end. phi plays no part; the global budget and goal still stop everything.
enum class Mode { kSurvey, kSequential };
Mode parse_mode(std::string_view s);  // kUsage on an unknown name
const char* mode_name(Mode m);

// One point of the latency curve: after a survey round.
struct CurvePoint {
  double seconds = 0;    // tuning time so far
  int64_t trials = 0;    // candidates measured so far
  double latency_s = 0;  // whole-model latency with the best choices so far
};

// The early-stop rule of survey tuning. curve[0] is the untuned model, curve[1] the
// survey of default points, then one point per round. Over the last `window` rounds, the
// best latency so far improved by less than phi x curve[0].latency_s per tuning second.
// Needs at least max(min_rounds, window) rounds after curve[1].
bool should_stop_early(const std::vector<CurvePoint>& curve, double phi, int window = 2,
                       int min_rounds = 2);

struct TuneOptions {
  Strategy strategy = Strategy::kEvolutionary;
  Mode mode = Mode::kSurvey;
  // Sequential mode: at most this many trials per task (default point included; 0: the
  // trial budget split evenly over the tasks when there is one, else 64) ...
  int task_trials = 0;
  // ... and a task ends after this many trials without a new best (AutoTVM's early stop).
  int patience = 24;
  int64_t budget_trials = 0;  // 0: unlimited
  double budget_seconds = 0;  // 0: unlimited
  double phi = 5e-4;          // early stop: relative improvement per second (0: off)
  // should_stop_early's window and minimum rounds. Each re-timing is noisy (a few %) and
  // gains come in jumps (a layer switching algorithm), so judging after 2 rounds of a
  // 2-round window stopped runs that had not yet found anything (vgg16-cifar, 2 threads:
  // stopped after 108 trials at 1.00x where other seeds reached 1.2x).
  int stop_window = 3;
  int stop_min_rounds = 4;
  double latency_goal_s = 0;  // stop when the model is at least this fast (0: off)
  uint64_t seed = 0;
  int batch = 4;             // trials per task per round (survey tuning)
  int round_trials = 0;      // trials per round (0: 2 x tasks, at least 16)
  double cold_margin = 0.5;  // cold: measured / predicted > (1 + margin) x the task's best
  double timeout_seconds = 1.0;
  bool filter_cold = true;  // Trimmer's cold-candidate filtering
  // Confirmation after the search: per layer, the `confirm_finalists` fastest measured
  // candidates (over its algorithms) and the auto rule's default point are timed again
  // against each other (Measurer::measure_interleaved, confirm_rounds rounds) and recorded,
  // so the choice is not the luckiest of many noisy timings. 0 rounds: off.
  int confirm_rounds = 5;
  int confirm_finalists = 3;
  std::string cost_model = "xgboost";
  // Whole-model latency (seconds) with these choices; null: the sum over tasks of
  // weight x the layer's best cost (no re-timing).
  std::function<double(const LayerChoices&)> model_latency;
  std::function<void(const Record&)> on_record;  // every measured candidate
  // The curve as it grows: round 0 is the untuned model, round 1 every default point.
  std::function<void(const CurvePoint&, int round)> on_round;
};

struct TuneReport {
  std::vector<Record> records;  // every candidate measured, in order
  std::vector<CurvePoint> curve;
  int64_t trials = 0, failures = 0, skipped_cold = 0, rounds = 0;
  double seconds = 0;          // tuning time (measurement + search + re-timing)
  double measure_seconds = 0;  // time inside measurements
  double cold_seconds = 0;     // measurement time of candidates that turned out cold
  double retime_seconds = 0;   // time inside model_latency (the curve's whole-model timings)
  // Whole-model timings after the first that threw (a plan that did not compile or run with
  // a round's choices): that point is left off the curve and the search goes on. The first
  // one's message. (The first timing, of the untuned model, throws out of tune().)
  int64_t retime_failures = 0;
  std::string retime_error;
  double confirm_seconds = 0;  // time of the confirmation (TuneOptions::confirm_rounds)
  int64_t confirmed = 0;       // candidates re-timed by it
  double untuned_latency_s = 0, tuned_latency_s = 0;
  double final_ranking_accuracy = 0.5;
  // "phi", "goal", "trials", "seconds", "exhausted"; sequential: "done" when every task
  // reached its own stop.
  std::string stop_reason;
  LayerChoices choices;  // the best per layer
  std::string cost_model;
};

// Tunes `tasks` (one or more per layer; a layer's choice is its fastest task).
TuneReport tune(const std::vector<Task>& tasks, Measurer& measurer, const TuneOptions& options);

// LayerChoices from tasks and the best ok record per task key: each node gets the
// fastest of its layer's tasks, or the fastest chosen one where the layer has one.
LayerChoices choices_from_best(const std::vector<Task>& tasks, const std::vector<Record>& best);

}  // namespace dlas::tune

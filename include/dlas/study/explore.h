// `dlas explore`: the best deployment of a trained model on this machine under an accuracy
// budget. It composes the stack's dimensions -- compression (int8 with each calibrator, fp16,
// bf16, weight/channel/block pruning, fine-tuned pruning levels from a prune sweep, and their
// compositions), the engine's conv algorithms and layouts, the vendor library and the installed
// peer engines, a short auto-tune -- into one search that spends its time where the answer can
// still change:
//
//   1. the dense model's latency and its accuracy on the whole test split (the reference);
//   2. the latency of every candidate (cheap, measured first);
//   3. accuracy raced on growing samples of the test split (a fixed random order), paired with
//      the dense model's answers on the same images: a model is dropped as soon as the lower
//      confidence bound of its accuracy drop exceeds the budget, or another is faster, no
//      larger and confidently at least as accurate; the survivors are confirmed on the whole
//      split;
//   4. fine-tuned pruning levels (dlas prune-sweep) only while a level could still beat the
//      fastest confirmed deployment;
//   5. a short tune of the fastest deployments within the budget;
//   6. the recommendation, the dense model and the best single-dimension choices timed again,
//      interleaved in one run.
//
// Every measurement is a row of a study results store (DIR/explore.db, so `dlas study report`
// reads it) and every scored sample a row of its explore table; --resume redoes nothing stored.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "dlas/system/preprocess_meta.h"

namespace dlas::study {

enum class ExploreMetric { kTop1, kTop5 };
const char* explore_metric_name(ExploreMetric m);        // "top1" / "top5"
ExploreMetric parse_explore_metric(std::string_view s);  // kUsage otherwise

// The dimensions an exploration searches (the default: default_explore_space).
struct ExploreSpace {
  // Applied to the model as --compress does: "dense", "int8:entropy", "fp16", "bp:4x1:0.5",
  // "wp:0.5" (one-shot, no fine-tuning), "cp:0.25+int8", ...
  std::vector<std::string> compress;
  std::vector<std::string> conv_algo;  // "auto" and conv_algorithm_names()
  std::vector<std::string> layout;     // "auto", "nchw", "nchwc"
  // "dlas", "onednn" and the peer engines (onnxruntime, openvino, tvm, deepsparse): the other
  // backends run the fp32 models (dense and pruned) with their own kernels.
  std::vector<std::string> backend;
  // Fine-tuned pruning levels (dlas prune-sweep: needs the dataset's training split and the
  // libtorch build); each level is fine-tuned from the previous one.
  std::vector<double> weight_levels, channel_levels;
  double finetune_epochs = 1.0;  // per method, shared evenly by the levels it fine-tunes
  // false: only the levels whose one-shot latency beats the fastest deployment within the
  // budget so far are fine-tuned; true: every level.
  bool finetune_all = false;
  // Appended to every fine-tuned level: "" (the level alone), "int8", ...
  std::vector<std::string> finetuned_quant = {"", "int8"};
  // Fine-tuning a level longer (once per method, as many epochs again, from its fine-tuned
  // weights): "near-miss" the fastest level that missed the budget by little and would be
  // the fastest deployment (explore_longer_pick); "always" the fastest fine-tuned level
  // outside the budget, however far and however fast; "never".
  std::string finetune_longer = "near-miss";
  std::string tuning = "tuned:10s";  // schedule of the short tune ("untuned": none)
  int tune_top = 3;                  // the fastest deployments within the budget it tunes
};

// The default space for a model and dataset: int8 with each calibrator, fp16, bf16, one-shot
// weight, channel and block pruning levels alone and with int8, the algorithms, the layouts,
// the built-in oneDNN backend and the installed peers; with `can_finetune`, the fine-tuned
// weight and channel levels.
ExploreSpace default_explore_space(bool can_finetune);
// Narrows or widens the default with a TOML file in the study spec's syntax: [space] keys
// compress, conv_algo, layout, backend, tuning (their lists replace the default's),
// [explore] keys weight_levels, channel_levels, finetune_epochs, finetune_all, finetune_longer,
// finetuned_quant, tune_top.
// kInvalidInput "FILE:LINE:COL: FIELD: why".
ExploreSpace read_explore_space(const std::string& path, ExploreSpace base);

struct ExploreOptions {
  std::string model;    // a trained .onnx model
  std::string dataset;  // labelled dataset (dlas/data/dataset.h names)
  PreprocessFlags preprocess;
  double max_drop = 0.5;  // accuracy budget, points of the metric below the dense model
  ExploreMetric metric = ExploreMetric::kTop1;
  int threads = 0;         // 0: every logical CPU
  double budget_s = 1800;  // wall clock for the whole search (the front so far when it ends)
  ExploreSpace space;
  std::string out_dir;
  bool resume = false;     // continue (or extend) the exploration stored in out_dir
  std::string exe;         // the dlas binary the measuring children run
  int repeat = 30;         // timed runs per candidate (the final comparison runs more)
  int final_rounds = 3;    // interleaved rounds of the final comparison
  uint64_t seed = 1;       // the test split's order
  double timeout_s = 600;  // per measuring child
  std::string lock_path;   // the measure lock (empty: the runner's default)
};

// The bound the race uses: over a population of `population` paired answers (+1: the first
// model right and the second wrong, -1: the reverse, 0: agree), the mean difference estimated
// from `n` of them drawn without replacement, `plus` of them +1 and `minus` -1. The variance
// counts one extra disagreement each way (so a few identical answers do not make it 0) and
// shrinks with the finite-population correction, to exactly 0 when n == population.
struct DifferenceBound {
  double low = 0, estimate = 0, high = 0;  // fractions
};
DifferenceBound paired_difference_bound(int64_t plus, int64_t minus, int64_t n, int64_t population,
                                        double z);
// The confidence multiplier of the race (two-sided 99.9%).
inline constexpr double kExploreZ = 3.29;

// The race's dominance rule: model b (fastest untuned latency b_ms, weights b_bytes) drops
// model a when it is faster by more than the margin (b_ms <= 0.9 a_ms: a's own algorithm and
// layout grid, measured after the race, could still speed it up), no larger, and confidently
// at least as accurate (b_minus_a: the paired bound of b's accuracy minus a's, low >= 0).
bool explore_dominates(double b_ms, int64_t b_bytes, double a_ms, int64_t a_bytes,
                       const DifferenceBound& b_minus_a);

// A fine-tuned pruning level as explore_longer_pick sees it: its fastest deployment's
// latency, the estimated drop below the dense model (points) and whether it is already
// within the budget.
struct LongerCandidate {
  double ms = -1;
  double drop = 0;
  bool within_budget = false;
};
// The level to fine-tune longer: the fastest one outside the budget that missed it by little
// (its estimated drop at most max(2 * max_drop, max_drop + 0.5) points) and whose latency is
// below 0.9 * target_ms, the fastest deployment within the budget so far (target_ms <= 0:
// none yet, any latency); with `any_miss`, the fastest one outside the budget. -1 when none.
int explore_longer_pick(const std::vector<LongerCandidate>& levels, double max_drop,
                        double target_ms, bool any_miss = false);

// The sample sizes of the race on a split of `n` images: 500, 1000, 2000, ... then n.
std::vector<int64_t> explore_sample_sizes(int64_t n);
// The order the race scores a split of `n` records in (a permutation fixed by the seed).
std::vector<int64_t> explore_order(int64_t n, uint64_t seed);

// What the search found; explore.json holds the same (and more).
struct ExploreCandidate {
  std::string group;       // the accuracy group (model + compression) it belongs to
  std::string label;       // "int8:entropy + direct, nchwc, tuned:10s"
  std::string variant_id;  // its row in the store
  std::string compress, conv_algo, layout, backend, schedule;
  std::string model_path;  // what it loads (the model, or a fine-tuned level's)
  std::string status;      // the store's status ("ok", "failed", ...) or "not-measured"
  std::string reason;
  double median_ms = -1, p90_ms = -1;
  int64_t size_bytes = -1;        // weights as the executor holds them
  int64_t peak_bytes = -1;        // peak RSS of its measuring process
  int64_t activation_bytes = -1;  // the plan's activation arena
  double seconds = 0;             // measuring it took
};
struct ExploreGroup {
  std::string key, label, model_path, compress, source;  // source: dense|one-shot|fine-tuned
  // dropped: outside the budget / dominated; confirmed: scored on the whole split; estimated:
  // the race stopped (budget) before the whole split; failed: could not be scored.
  std::string state = "racing";
  std::string reason;
  int64_t samples = 0;                 // images scored
  double accuracy = -1;                // the metric on those, fraction
  double drop_low = 0, drop_high = 0;  // confidence interval of the drop, points
  double seconds = 0;                  // scoring time
};
struct ExploreResult {
  std::vector<ExploreGroup> groups;
  std::vector<ExploreCandidate> candidates;
  int recommendation = -1;  // index into candidates
  int dense = -1;           // the dense fp32 auto candidate
  std::vector<int> front;   // Pareto front (latency, accuracy, size) of the confirmed candidates
  double seconds = 0;
  bool budget_reached = false;
  // Measuring children this run started (what a resumed run did not find stored).
  int64_t latency_runs = 0, scoring_runs = 0, final_runs = 0;
  int64_t gate_runs = 0;  // close-call re-timings before fine-tuning
};

// Progress lines (stderr through dlas/core/progress.h by the CLI).
using ExploreLog = std::function<void(const std::string& line)>;

// Runs (or with resume continues) the search and writes DIR: explore.db, explore.json,
// best.onnx (+ best.records.jsonl when tuned), README.md and report.html. kInvalidInput /
// kUsage with one line for bad input: a missing or untrained model, a dataset without labels
// or whose classes differ from the model's outputs, a negative budget, a non-empty DIR
// without --resume.
ExploreResult explore(const ExploreOptions& options, const ExploreLog& log = {});

// The child side of the race (`dlas explore exec-score`): scores one model + compression on
// records [begin, end) of explore_order and prints {"hits": "<hex>", "seconds": s}.
struct ScoreChildArgs {
  std::string model_path, compress, dataset, conv_algo = "auto", layout = "auto", backend = "dlas";
  std::string records;  // tuning records to apply ("": none)
  PreprocessFlags preprocess;
  int threads = 1;
  int64_t begin = 0, end = 0;
  uint64_t seed = 1;
};
std::string run_score_child(const ScoreChildArgs& args);

}  // namespace dlas::study

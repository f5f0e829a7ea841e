// Internal: the study rows grouped into contexts, and the statistics the report
// and the observations share (speedups against dense, correlations over models).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "dlas/study/report.h"

namespace dlas::study::analysis {

// One ok variant of a context: its algorithm x compression cell.
struct Variant {
  std::string algorithm, compress, variant_id;
  bool vendor = false;  // a vendor library's row (oneDNN), placed in dlas's contexts
  double median_ms = 0, p10_ms = 0, p90_ms = 0, cv = 0;
  int64_t params = 0, macs = 0;
  bool has_accuracy = false;
  double accuracy = 0;         // top-1 (fraction)
  double top5 = -1;            // -1: not measured
  int64_t nonzero_params = 0;  // = params when not measured
  std::string schedule;
  double tuning_s = 0;        // tuned schedules: auto-tuning time
  int64_t tuning_trials = 0;  // candidates measured while tuning
};

// Platform x model x batch x opt level x activation layout; variants keyed by (algorithm,
// compression). When one key was measured more than once (several hardware ids with the
// same description), the fastest median is kept.
struct Context {
  std::string platform, model, schedule;  // model: "name @dataset" when built for a dataset
  std::string device = "cpu";             // "cpu" | "cuda:N"
  std::string dataset;
  // The dlas rows' activation layout: "auto" (also rows stored before layouts existed),
  // "nchw" or "nchwc". Vendor rows join the contexts of every layout.
  std::string layout = "auto";
  int64_t batch = 1, opt_level = 3, threads = 1;
  std::map<std::pair<std::string, std::string>, Variant> variants;

  // The fastest variant whose (algorithm, compression) key satisfies `pred`; nullptr if none.
  const Variant* fastest(
      const std::function<bool(const std::pair<std::string, std::string>&)>& pred) const;
};

// A row's device: "cpu" (also rows stored before devices existed) or "cuda:N".
std::string device_of(const Row& row);

// Contexts of the ok rows, ordered by (platform, model, batch, opt level, layout).
std::vector<Context> contexts_of(const std::vector<Row>& rows);

// The platform column of a context's table rows: the platform, then " / <layout>" when the
// layout is not auto (so contexts that differ only in layout stay apart).
std::string platform_label(const Context& c);

// A tuned context's untuned twin: same CPU, ISA path, threads, model, batch, opt level and
// layout, schedule "default". Key of a context with its schedule left out.
std::string untuned_twin_key(const Context& c);
bool is_tuned(const std::string& schedule);

// Fixed-point with `digits` decimals; "nan" for non-finite values.
std::string fmt(double v, int digits);
// Median of a non-empty vector (sorted or not).
double median(std::vector<double> v);

// Expected speedup of a compression spec over dense ("wp:0.9" or "wp:0.9:layer" -> 10,
// "bp:4x1:0.75" -> 4; "cp:S" uses the MAC
// ratio `dense_macs / macs`; "fp16"/"bf16" 2; "int8[:cal]" 4; parts joined by '+'
// multiply). Returns 0 when the spec is unknown.
double expected_speedup(const std::string& compress, int64_t dense_macs, int64_t macs);

struct Speedup {
  const Context* context;
  std::string algorithm, compress;
  double dense_ms, ms, expected, achieved;
};
// Every compressed variant that has a dense twin (same context and algorithm).
std::vector<Speedup> speedups(const std::vector<Context>& contexts);

struct Correlation {
  std::string platform, x, y;
  int n = 0;  // models
  double spearman = 0, pearson = 0;
};
// Per platform (schedule included), over models with a dense variant: correlations of
// params, MACs, accuracy (when every model has one) and the fastest dense latency.
// Needs 3 models or more.
std::vector<Correlation> correlations(const std::vector<Context>& contexts);

// The summary table of report_tables (summary.cc): per CPU, model, dataset and batch, the
// fastest ok variant over everything measured, its speedup over the dense fp32 baseline
// (dlas, untuned, same threads, auto) and its top-1 and top-1 change when scored.
Table summary_of(const std::vector<Row>& rows);
// A model's display name: an .onnx path's file name without the extension; zoo names as is.
std::string short_model(const std::string& model);

// The accuracy_summary table of report_tables (report.cc).
Table accuracy_summary_of(const std::vector<Context>& contexts);

// The activation layouts of the contexts' dlas rows, NCHW first, then the blocked layout,
// then auto (and any other value, sorted).
std::vector<std::string> layouts_of(const std::vector<Context>& contexts);

double pearson(const std::vector<double>& x, const std::vector<double>& y);
double spearman(const std::vector<double>& x, const std::vector<double>& y);

}  // namespace dlas::study::analysis

// `dlas tune`'s run: options from the flags, the live records log and the tuner
// (src/system/tune/); cmd_tune_report.cc prints the report.
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <set>

#include "cmd_tune.h"
#include "dlas/core/error.h"
#include "dlas/core/file.h"
#include "dlas/system/tune_model.h"

namespace dlas::cli {

namespace {

tune::TuneOptions options_from_args(const TuneArgs& a) {
  tune::TuneOptions o;
  tune::Budget budget;
  try {
    budget = tune::parse_budget(a.budget);
  } catch (const Error& e) {
    fail(ErrorKind::kUsage, "--", e.what());  // "--budget '5x': unknown unit 'x' ..."
  }
  o.budget_seconds = budget.seconds;
  o.budget_trials = budget.trials;
  o.strategy = tune::parse_strategy(a.strategy);
  o.mode = tune::parse_mode(a.mode);
  o.task_trials = a.task_trials;
  o.patience = a.patience;
  o.confirm_rounds = a.confirm_rounds;
  o.phi = a.phi;
  o.latency_goal_s = a.goal_ms / 1e3;
  o.seed = a.tune_seed;
  o.batch = a.batch;
  o.timeout_seconds = a.timeout_s;
  o.filter_cold = !a.no_filter;
  o.cost_model = a.cost_model;
  return o;
}

// One stderr line per round (sequential: round 1 is the defaults, then one per layer).
std::function<void(const tune::CurvePoint&, int)> round_printer(tune::Mode mode) {
  auto untuned = std::make_shared<double>(0);
  return [mode, untuned](const tune::CurvePoint& p, int round) {
    if (round == 0) {
      *untuned = p.latency_s;
      std::fprintf(stderr, "tune: untuned latency %.3f ms\n", p.latency_s * 1e3);
      return;
    }
    const bool layer = mode == tune::Mode::kSequential && round > 1;
    std::fprintf(stderr, "tune: %s %d  %6lld trials  %7.1f s  latency %.3f ms",
                 layer ? "layer" : "round", layer ? round - 1 : round,
                 static_cast<long long>(p.trials), p.seconds, p.latency_s * 1e3);
    if (*untuned > 0) std::fprintf(stderr, "  (%.2fx untuned)", *untuned / p.latency_s);
    std::fprintf(stderr, "\n");
  };
}

}  // namespace

int run_tune(const ModelArgs& model, const EngineArgs& engine, const TuneArgs& a) {
  if (engine.device != "cpu") return run_cuda_tune(model, engine, a);
  tune::TuneOptions o = options_from_args(a);
  TuneRun t;
  t.compress = compress_name(engine.compress);
  Graph g = load_model_from_args(model);
  apply_compress(g, engine.compress, nullptr, engine.threads);
  const PlanOptions po = plan_options_from_args(engine, &g);
  t.tasks = tune::extract_tasks(g, po);
  DLAS_CHECK(!t.tasks.empty(), ErrorKind::kUnsupported, model.model,
             ": no conv layer to tune (f32, int8, fp16 or bf16 convs with constant weights)");
  std::set<std::string> layers;
  for (const auto& task : t.tasks) layers.insert(task.layer);
  t.layers = layers.size();
  std::fprintf(stderr,
               "tune: %s (%s), %zu tasks over %zu conv layer shapes, %s %s search, %s cost "
               "model, %d threads, %s\n",
               model.model.c_str(), t.compress.c_str(), t.tasks.size(), t.layers, a.mode.c_str(),
               a.strategy.c_str(), tune::have_xgboost() ? a.cost_model.c_str() : "knn",
               t.tasks[0].threads, isa_name(t.tasks[0].isa));
  tune::MeasureOptions mo;
  mo.repeat = a.repeat;
  mo.timeout_seconds = a.timeout_s;
  if (a.cache == "model") mo.reuse_bytes = tune::model_reuse_bytes(g, po);
  t.reuse_bytes = mo.reuse_bytes;
  auto measurer = tune::make_conv_measurer(mo);
  // Paired timings against the fastest model so far (tune_model.h: ModelTimer).
  tune::ModelTimer timer(g, po);
  o.model_latency = [&](const LayerChoices& c) { return timer(c); };
  // The live log: every candidate as it is measured, renamed into place at the end.
  const std::string log = a.out + ".partial";
  std::filesystem::remove(log);
  std::ofstream(log).flush();  // exists even when the budget ends before any trial
  o.on_record = [&](const tune::Record& r) { tune::append_record(log, r); };
  o.on_round = round_printer(o.mode);
  t.report = tune::tune(t.tasks, *measurer, o);
  if (t.report.retime_failures > 0)
    std::fprintf(stderr,
                 "tune: warning: %lld whole-model timings failed and were left off the curve "
                 "(first: %s)\n",
                 static_cast<long long>(t.report.retime_failures), t.report.retime_error.c_str());
  // The whole-model pick pinned in the records, so --records runs what was timed best.
  for (const tune::Record& r :
       tune::chosen_records(g, po, t.tasks, t.report, *measurer, a.timeout_s))
    tune::append_record(log, r);
  commit_temp_file(log, a.out);
  // The whole-model winner as a --layers file (the records' chosen entries give the same).
  if (!a.choices.empty()) write_layer_choices(a.choices, t.report.choices);
  print_tune_report(model.model, a, t);
  return 0;
}

}  // namespace dlas::cli

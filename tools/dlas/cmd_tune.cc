// dlas tune: auto-tunes a model's conv layers (src/system/tune/) and writes JSON Lines
// records that `dlas bench|run|profile --records` apply; `dlas records best` distills them.
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <set>

#include "cli.h"
#include "dlas/core/error.h"
#include "dlas/system/measure.h"
#include "dlas/system/tune.h"
#include "dlas/system/tune_model.h"

namespace dlas::cli {
namespace {

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

}  // namespace

void add_tune_command(CLI::App& app, Action& run) {
  auto* cmd = app.add_subcommand(
      "tune",
      "Auto-tune a model's conv layers (algorithm and knobs per layer) and write JSON Lines "
      "records for --records");
  auto model = std::make_shared<ModelArgs>();
  auto engine = std::make_shared<EngineArgs>();
  auto a = std::make_shared<TuneArgs>();
  add_model_args(*cmd, *model);
  add_engine_args(*cmd, *engine);
  cmd->add_option("-o,--output", a->out, "records file to write (JSON Lines)")->required();
  cmd->add_option("--choices", a->choices,
                  "also write the tuner's final per-layer choices (the fastest whole model "
                  "timed) as a --layers JSON file");
  cmd->add_option("--budget", a->budget,
                  "stop after this much tuning: 120s, 2m, 500trials, or both (120s,500trials)")
      ->default_val("120s");
  cmd->add_option("--strategy", a->strategy, "search: random|grid|evolutionary")
      ->default_val("evolutionary")
      ->check(CLI::IsMember({"random", "grid", "evolutionary"}));
  cmd->add_option("--mode", a->mode,
                  "survey: rounds over all tasks, early stop by --phi; sequential: the tasks "
                  "one after another, each until --patience trials bring no new best or "
                  "--task-trials")
      ->default_val("survey")
      ->check(CLI::IsMember({"survey", "sequential"}));
  cmd->add_option("--task-trials", a->task_trials,
                  "sequential: trials per task at most (0: a trial budget split over the "
                  "tasks, else 64)")
      ->default_val(0)
      ->check(CLI::Range(0, 1000000));
  cmd->add_option("--patience", a->patience,
                  "sequential: a task stops after this many trials without a new best")
      ->default_val(24)
      ->check(CLI::Range(1, 1000000));
  cmd->add_option("--phi", a->phi,
                  "early stop when the model's latency improves by less than this fraction "
                  "per tuning second (0: off)")
      ->default_val(5e-4)
      ->check(CLI::Range(0.0, 1.0));
  cmd->add_option("--goal-ms", a->goal_ms, "stop once the model runs this fast (0: off)")
      ->default_val(0)
      ->check(CLI::Range(0.0, 1e9));
  cmd->add_option("--tune-seed", a->tune_seed, "seed of the search (--seed seeds the zoo weights)");
  cmd->add_option("--batch-trials", a->batch, "trials per batch given to a task (survey tuning)")
      ->default_val(4)
      ->check(CLI::Range(1, 1000));
  cmd->add_option("--repeat", a->repeat, "timed repeats per candidate (median)")
      ->default_val(5)
      ->check(CLI::Range(1, 1000));
  cmd->add_option("--confirm-rounds", a->confirm_rounds,
                  "after the search, each layer's 3 fastest candidates and its untuned default "
                  "are timed again against each other in this many interleaved rounds (0: "
                  "off; adds about a second)")
      ->default_val(5)
      ->check(CLI::Range(0, 1000));
  cmd->add_option("--measure-cache", a->cache,
                  "model: time each candidate with its weights as cold as inside the model "
                  "(copies rotated over the model's packed weights + activations); warm: one "
                  "copy, warm in cache (an isolated benchmark)")
      ->default_val("model")
      ->check(CLI::IsMember({"model", "warm"}));
  cmd->add_option("--timeout", a->timeout_s, "seconds one run of a candidate may take")
      ->default_val(1.0)
      ->check(CLI::Range(1e-4, 3600.0));
  cmd->add_option("--cost-model", a->cost_model, "xgboost|knn")
      ->default_val("xgboost")
      ->check(CLI::IsMember({"xgboost", "knn"}));
  cmd->add_flag("--no-filter", a->no_filter, "measure every candidate (no cold filtering)");
  cmd->add_flag("--json", a->json, "print one JSON object (with the latency curve)");
  cmd->callback([&run, model, engine, a] {
    run = [model, engine, a] {
      tune::TuneOptions o;
      tune::Budget budget;
      try {
        budget = tune::parse_budget(a->budget);
      } catch (const Error& e) {
        fail(ErrorKind::kUsage, "--", e.what());  // "--budget '5x': unknown unit 'x' ..."
      }
      o.budget_seconds = budget.seconds;
      o.budget_trials = budget.trials;
      o.strategy = tune::parse_strategy(a->strategy);
      o.mode = tune::parse_mode(a->mode);
      o.task_trials = a->task_trials;
      o.patience = a->patience;
      const std::string compress = compress_name(engine->compress);
      Graph g = load_model_from_args(*model);
      apply_compress(g, engine->compress);
      const PlanOptions po = plan_options_from_args(*engine, &g);
      const std::vector<tune::Task> tasks = tune::extract_tasks(g, po);
      DLAS_CHECK(!tasks.empty(), ErrorKind::kUnsupported, model->model,
                 ": no conv layer to tune (f32, int8, fp16 or bf16 convs with constant weights)");
      size_t layers = 0;
      {
        std::set<std::string> seen;
        for (const auto& t : tasks) seen.insert(t.layer);
        layers = seen.size();
      }
      std::fprintf(stderr,
                   "tune: %s (%s), %zu tasks over %zu conv layer shapes, %s %s search, %s cost "
                   "model, %d threads, %s\n",
                   model->model.c_str(), compress.c_str(), tasks.size(), layers, a->mode.c_str(),
                   a->strategy.c_str(), tune::have_xgboost() ? a->cost_model.c_str() : "knn",
                   tasks[0].threads, isa_name(tasks[0].isa));
      tune::MeasureOptions mo;
      mo.repeat = a->repeat;
      mo.timeout_seconds = a->timeout_s;
      if (a->cache == "model") mo.reuse_bytes = tune::model_reuse_bytes(g, po);
      auto measurer = tune::make_conv_measurer(mo);
      o.confirm_rounds = a->confirm_rounds;
      o.phi = a->phi;
      o.latency_goal_s = a->goal_ms / 1e3;
      o.seed = a->tune_seed;
      o.batch = a->batch;
      o.timeout_seconds = a->timeout_s;
      o.filter_cold = !a->no_filter;
      o.cost_model = a->cost_model;
      // Paired timings against the fastest model so far (tune_model.h: ModelTimer).
      tune::ModelTimer timer(g, po);
      o.model_latency = [&](const LayerChoices& c) { return timer(c); };
      // The live log: every candidate as it is measured, renamed into place at the end.
      const std::string tmp = a->out + ".partial";
      std::filesystem::remove(tmp);
      std::ofstream(tmp).flush();  // exists even when the budget ends before any trial
      o.on_record = [&](const tune::Record& r) { tune::append_record(tmp, r); };
      double untuned = 0;
      o.on_round = [&](const tune::CurvePoint& p, int round) {
        if (round == 0) {
          untuned = p.latency_s;
          std::fprintf(stderr, "tune: untuned latency %.3f ms\n", p.latency_s * 1e3);
          return;
        }
        // Sequential: round 1 is the defaults, then one checkpoint per layer.
        std::fprintf(stderr, "tune: %s %d  %6lld trials  %7.1f s  latency %.3f ms",
                     o.mode == tune::Mode::kSequential && round > 1 ? "layer" : "round",
                     o.mode == tune::Mode::kSequential && round > 1 ? round - 1 : round,
                     static_cast<long long>(p.trials), p.seconds, p.latency_s * 1e3);
        if (untuned > 0) std::fprintf(stderr, "  (%.2fx untuned)", untuned / p.latency_s);
        std::fprintf(stderr, "\n");
      };
      tune::TuneReport r = tune::tune(tasks, *measurer, o);
      std::error_code ec;
      std::filesystem::rename(tmp, a->out, ec);
      DLAS_CHECK(!ec, ErrorKind::kRuntime, a->out, ": cannot move the records into place");
      if (!a->choices.empty()) {
        // The whole-model winner, which per-task best records need not reproduce (layers
        // timed alone do not always compose): `--layers FILE` runs exactly it.
        nlohmann::ordered_json c = nlohmann::ordered_json::object();
        for (const auto& [node, choice] : r.choices) {
          nlohmann::ordered_json k = nlohmann::ordered_json::object();
          for (const auto& [name, v] : choice.knobs) k[name] = v;
          c[node] = {{"algo", choice.algo}, {"knobs", k}};
        }
        const std::string ctmp = a->choices + ".partial";
        std::ofstream(ctmp) << c.dump(2) << "\n";
        std::filesystem::rename(ctmp, a->choices, ec);
        DLAS_CHECK(!ec, ErrorKind::kRuntime, a->choices, ": cannot move the choices into place");
      }
      const double cold_share = r.measure_seconds > 0 ? r.cold_seconds / r.measure_seconds : 0;
      const double speedup = r.tuned_latency_s > 0 ? r.untuned_latency_s / r.tuned_latency_s : 0;
      nlohmann::ordered_json j;
      j["model"] = model->model;
      j["compress"] = compress;
      j["strategy"] = a->strategy;
      j["mode"] = a->mode;
      j["cost_model"] = r.cost_model;
      j["threads"] = tasks[0].threads;
      j["isa"] = isa_name(tasks[0].isa);
      j["hardware"] = tune::hardware_id(tasks[0].isa, tasks[0].threads);
      j["tasks"] = tasks.size();
      j["layers"] = layers;
      j["trials"] = r.trials;
      j["failures"] = r.failures;
      j["skipped_cold"] = r.skipped_cold;
      j["rounds"] = r.rounds;
      j["tuning_seconds"] = r.seconds;
      j["measure_seconds"] = r.measure_seconds;
      j["cold_seconds"] = r.cold_seconds;
      j["retime_seconds"] = r.retime_seconds;
      j["confirm_seconds"] = r.confirm_seconds;
      j["confirmed"] = r.confirmed;
      j["measure_cache"] = a->cache;
      j["reuse_bytes"] = mo.reuse_bytes;
      j["cold_share"] = cold_share;
      j["ranking_accuracy"] = r.final_ranking_accuracy;
      j["untuned_ms"] = r.untuned_latency_s * 1e3;
      j["tuned_ms"] = r.tuned_latency_s * 1e3;
      j["speedup"] = speedup;
      j["stop_reason"] = r.stop_reason;
      j["records"] = a->out;
      if (!a->choices.empty()) j["choices"] = a->choices;
      j["curve"] = nlohmann::json::array();
      for (const tune::CurvePoint& p : r.curve)
        j["curve"].push_back(
            {{"seconds", p.seconds}, {"trials", p.trials}, {"latency_ms", p.latency_s * 1e3}});
      if (a->json) {
        std::cout << j.dump(2) << "\n";
        return 0;
      }
      std::printf("tuned %s in %.1f s (%s): %lld trials, %lld failed, %lld skipped as cold\n",
                  model->model.c_str(), r.seconds, r.stop_reason.c_str(),
                  static_cast<long long>(r.trials), static_cast<long long>(r.failures),
                  static_cast<long long>(r.skipped_cold));
      std::printf(
          "latency %.3f ms -> %.3f ms (%.2fx); %.0f%% of measuring time on cold or "
          "failed candidates; cost model ranking accuracy %.2f\n",
          r.untuned_latency_s * 1e3, r.tuned_latency_s * 1e3, speedup, cold_share * 100,
          r.final_ranking_accuracy);
      std::printf("records: %s (apply with --records)\n", a->out.c_str());
      return 0;
    };
  });

  auto* rec = app.add_subcommand("records", "Work with tuning records (JSON Lines)");
  rec->require_subcommand(1);
  auto* best = rec->add_subcommand("best", "Keep the best record per task");
  auto in = std::make_shared<std::string>();
  auto out = std::make_shared<std::string>();
  auto json = std::make_shared<bool>(false);
  best->add_option("IN", *in, "records file (JSON Lines)")->required()->check(CLI::ExistingFile);
  best->add_option("-o,--output", *out, "distilled records file to write")->required();
  best->add_flag("--json", *json, "print one JSON object");
  best->callback([&run, in, out, json] {
    run = [in, out, json] {
      const std::vector<tune::Record> all = tune::read_records(*in);
      const std::vector<tune::Record> b = tune::best_records(all);
      tune::write_records(*out, b);
      size_t failed = 0;
      for (const auto& r : all) failed += !r.ok();
      if (*json) {
        nlohmann::ordered_json j;
        j["input"] = *in;
        j["output"] = *out;
        j["records"] = all.size();
        j["failed"] = failed;
        j["tasks"] = b.size();
        std::cout << j.dump(2) << "\n";
      } else {
        std::printf("%zu records (%zu failed) -> %zu tasks' best in %s\n", all.size(), failed,
                    b.size(), out->c_str());
      }
      return 0;
    };
  });
}

}  // namespace dlas::cli

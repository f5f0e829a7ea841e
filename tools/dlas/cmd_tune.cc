// dlas tune: auto-tunes a model's conv layers (src/system/tune/) and writes JSON Lines
// records that `dlas bench|run|profile --records` apply; `dlas records best` distills them.
#include <memory>

#include "cmd_tune.h"

namespace dlas::cli {

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
    run = [model, engine, a] { return run_tune(*model, *engine, *a); };
  });
  add_records_command(app, run);
}

}  // namespace dlas::cli

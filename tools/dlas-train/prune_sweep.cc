// `dlas prune-sweep` with libtorch (bin/dlas-train): a zoo baseline trained first when asked,
// then the sweep (dlas/torch/prune_sweep_run.h) and its table or JSON.
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <map>
#include <optional>

#include "cmd_train.h"
#include "dlas/core/file.h"
#include "dlas/core/progress.h"
#include "dlas/data/dataset.h"
#include "dlas/model/zoo.h"
#include "dlas/system/accuracy.h"
#include "dlas/torch/prune_sweep_run.h"
#include "dlas/torch/train.h"

namespace dlas::cli {

namespace {

namespace fs = std::filesystem;

std::atomic<bool> g_stop{false};
// The first Ctrl-C finishes cleanly (the levels done so far are kept; an engine evaluation
// under way runs to its end), a second one kills at once.
void on_sigint(int) {
  if (g_stop.exchange(true)) {
    std::signal(SIGINT, SIG_DFL);
    std::raise(SIGINT);
  }
}

void say(const std::string& s) { progress_message("prune-sweep: " + s); }

// Settings beside the sweep's own, compared by --resume: what made the baseline.
std::map<std::string, std::string> baseline_settings(const SweepArgs& a, bool zoo) {
  if (!zoo) return {{"model-hash", file_hash_hex(a.model)}};
  return {{"width-mult", exact_number(a.width_mult)},
          {"train-epochs", std::to_string(a.train_epochs)},
          {"train-lr", exact_number(a.train_lr)}};
}

// A zoo baseline built for the dataset and trained as `dlas train` would (its default
// schedule); nullopt when Ctrl-C stopped the training.
std::optional<Graph> train_baseline(const SweepArgs& a, const data::Dataset& ds, bool tty) {
  TrainArgs t;
  t.model = a.model;
  t.dataset = a.dataset;
  t.width_mult = a.width_mult;
  t.epochs = a.train_epochs;
  t.batch = a.batch;
  t.lr = a.train_lr;
  t.label_smoothing = a.label_smoothing;
  t.limit = a.limit;
  t.threads = a.threads;
  t.seed = a.seed;
  t.no_augment = a.no_augment;
  t.preprocess = a.preprocess;
  say(str("training the baseline ", a.model, " on ", a.dataset, " for ", a.train_epochs,
          " epochs"));
  Graph model = model_to_train(t, ds.info());
  TrainOptions options =
      train_options(t, ds.info(), model, &g_stop, tty ? train_progress_printer(true) : nullptr);
  Trainer trainer(std::move(model), std::move(options));
  if (trainer.fit(ds).stopped) return std::nullopt;
  return trainer.graph();
}

PruneSweepOptions sweep_options(const SweepArgs& a, bool tty) {
  PruneSweepOptions o;
  o.model = a.model;
  o.dataset = a.dataset;
  o.method = parse_sweep_method(a.method);
  o.levels = sweep_levels_from_args(a);
  o.epochs = a.epochs;
  o.train.batch = a.batch;
  o.train.lr = a.lr;
  o.train.schedule = parse_lr_schedule(a.schedule);
  o.train.label_smoothing = a.label_smoothing;
  o.train.threads = a.threads;
  o.train.seed = a.seed;
  o.train.limit = a.limit;
  o.train.augment = !a.no_augment;
  o.train.on_progress = tty ? train_progress_printer(true) : nullptr;
  o.test_limit = a.test_limit;
  o.tolerance = a.tolerance / 100;
  o.calibrator = a.calibrator;
  o.dir = a.output;
  o.stop = &g_stop;
  o.on_line = say;
  o.resume = a.resume;
  o.settings = baseline_settings(a, find_zoo_model(a.model) != nullptr);
  std::string pre;
  for (const std::string& s : preprocess_arg_list(a.preprocess)) pre += (pre.empty() ? "" : " ") + s;
  if (!pre.empty()) o.settings["preprocess"] = pre;
  return o;
}

}  // namespace

int run_sweep(const SweepArgs& a) {
  const auto t0 = std::chrono::steady_clock::now();
  const bool tty = progress_tty(a.json);
  auto train_ds = data::open_dataset(a.dataset, data::Split::kTrain);  // unknown: exit 2
  std::signal(SIGINT, on_sigint);
  const PruneSweepOptions o = sweep_options(a, tty);
  Graph baseline;
  if (find_zoo_model(a.model) == nullptr) {
    baseline = load_model(a.model);
    apply_preprocess_args(baseline, train_ds->info(), a.preprocess, a.model, /*train=*/true);
  } else if (a.resume) {
    // The baseline was trained and written by the run being resumed.
    const fs::path file = fs::path(a.output) / "baseline.onnx";
    DLAS_CHECK(fs::is_regular_file(file), ErrorKind::kInvalidInput, file.string(),
               ": missing: cannot resume");
    baseline = load_model(file.string());
  } else if (std::optional<Graph> trained = train_baseline(a, *train_ds, tty)) {
    baseline = std::move(*trained);
  } else {
    std::cerr << "dlas: interrupted while training the baseline: nothing written\n";
    return 130;
  }
  const PruneSweepRun run = run_prune_sweep(baseline, o);
  std::signal(SIGINT, SIG_DFL);
  print_sweep(a, run, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  if (run.stopped) {
    std::cerr << "dlas: interrupted: kept the " << run.result.points.size()
              << " finished levels in " << (fs::path(a.output) / "sweep.json").string() << "\n";
    return 130;
  }
  return 0;
}

}  // namespace dlas::cli

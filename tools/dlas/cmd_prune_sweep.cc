// `dlas prune-sweep`: the paper's iterative prune-and-fine-tune sweep of one model and method
// (dlas/model/prune_sweep_run.h) -- the accuracy-vs-compression curve and its elbow, written
// to a directory as sweep.json (dlas/optimize/prune_sweep.h), one model per level, elbow.onnx
// and curve.csv. Like `dlas train`, bin/dlas parses and checks the arguments and execs
// bin/dlas-train, the only binary that links libtorch.
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>

#include "cli.h"
#include "dlas/data/dataset.h"
#include "dlas/model/zoo.h"
#include "dlas/optimize/prune_sweep.h"

#ifdef DLAS_HAVE_TORCH
#include "dlas/model/onnx.h"
#include "dlas/model/prune_sweep_run.h"
#include "dlas/model/train.h"
#include "dlas/system/accuracy.h"
#include "dlas/system/loader.h"
#endif

namespace dlas::cli {

namespace {

namespace fs = std::filesystem;

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
  std::string calibrator = "minmax";
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
};

std::string num(double v) { return exact_number(v); }

std::vector<double> parse_levels(const std::string& text, PruneMethod method) {
  if (text.empty()) return default_sweep_levels(method);
  std::vector<double> v;
  std::stringstream ss(text);
  for (std::string part; std::getline(ss, part, ',');) {
    size_t used = 0;
    double d = 0;
    try {
      d = std::stod(part, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    DLAS_CHECK(used == part.size() && !part.empty(), ErrorKind::kUsage, "--levels '", text, "': '",
               part, "' is not a number");
    DLAS_CHECK(d > 0 && d < 1, ErrorKind::kUsage, "--levels '", text, "': ", part,
               " is outside (0, 1)");
    DLAS_CHECK(v.empty() || d > v.back(), ErrorKind::kUsage, "--levels '", text,
               "': levels must be ascending (", num(v.empty() ? 0 : v.back()), " then ", part, ")");
    v.push_back(d);
  }
  DLAS_CHECK(!v.empty(), ErrorKind::kUsage, "--levels is empty");
  return v;
}

// Everything checkable without libtorch, so bad input fails before the exec.
void check_args(const SweepArgs& a) {
  DLAS_CHECK(!a.output.empty(), ErrorKind::kUsage, "-o: an output directory is required");
  PruneMethod method;
  try {
    method = parse_sweep_method(a.method);
  } catch (const Error&) {
    fail(ErrorKind::kUsage, "--method '", a.method, "': expected weight or channel",
         a.method == "block" ? " (block pruning is not swept)" : "");
  }
  parse_levels(a.levels, method);
  const bool zoo = find_zoo_model(a.model) != nullptr;
  DLAS_CHECK(!zoo || a.train_epochs > 0, ErrorKind::kUsage, "'", a.model,
             "' is a zoo model: add --train-epochs N to train the baseline first (or sweep a "
             ".onnx trained with `dlas train`)");
  DLAS_CHECK(zoo || a.train_epochs == 0, ErrorKind::kUsage,
             "--train-epochs applies to zoo models only, not '", a.model, "'");
  DLAS_CHECK(zoo || a.width_mult == 1.0, ErrorKind::kUsage,
             "--width-mult applies to zoo models only, not '", a.model, "'");
  DLAS_CHECK(zoo || fs::is_regular_file(a.model), ErrorKind::kInvalidInput, a.model,
             ": no such model file (and not a zoo model, see `dlas zoo`)");
  DLAS_CHECK(a.epochs >= 0, ErrorKind::kUsage, "--epochs must be >= 0");
  DLAS_CHECK(a.label_smoothing >= 0 && a.label_smoothing < 1, ErrorKind::kUsage,
             "--label-smoothing ", num(a.label_smoothing), " is outside [0, 1)");
  DLAS_CHECK(a.tolerance >= 0 && a.tolerance <= 100, ErrorKind::kUsage,
             "--tolerance must be in [0, 100] top-1 points");
  std::error_code ec;
  DLAS_CHECK(!fs::exists(a.output) || fs::is_directory(a.output), ErrorKind::kInvalidInput,
             a.output, ": exists and is not a directory");
  if (a.resume) {
    const fs::path file = fs::path(a.output) / "sweep.json";
    DLAS_CHECK(fs::is_regular_file(file, ec), ErrorKind::kInvalidInput, file.string(),
               ": not found: --resume continues an interrupted `dlas prune-sweep -o ", a.output,
               "`");
    return;
  }
  DLAS_CHECK(a.force || !fs::exists(a.output) || fs::is_empty(a.output, ec),
             ErrorKind::kInvalidInput, a.output,
             ": directory is not empty (use --force to write into it, or --resume to continue "
             "the sweep there)");
}

// FNV-1a 64 of a file's bytes, 16 hex digits: --resume refuses another model file.
std::string file_hash(const std::string& path) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  DLAS_CHECK(f != nullptr, ErrorKind::kInvalidInput, path, ": cannot read");
  uint64_t h = 0xcbf29ce484222325ull;
  unsigned char buf[1 << 16];
  for (size_t n; (n = std::fread(buf, 1, sizeof buf, f)) > 0;) {
    for (size_t i = 0; i < n; ++i) h = (h ^ buf[i]) * 0x100000001b3ull;
  }
  std::fclose(f);
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(h));
  return hex;
}

#ifdef DLAS_HAVE_TORCH
std::atomic<bool> g_stop{false};
// The first Ctrl-C finishes cleanly (the levels done so far are kept; an engine evaluation
// under way runs to its end), a second one kills at once.
void on_sigint(int) {
  if (g_stop.exchange(true)) {
    std::signal(SIGINT, SIG_DFL);
    std::raise(SIGINT);
  }
}

std::string pct(double f) {
  if (f < 0) return "-";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f%%", 100 * f);
  return buf;
}

void print_table(const SweepResult& r) {
  std::printf("%-10s %8s %8s %8s %8s %12s %12s %14s %7s %8s\n", "SPEC", "ACHIEVED", "PRUNED",
              "TOP-1", "TOP-5", "PARAMS", "NONZERO", "MACS", "EPOCHS", "SECONDS");
  auto row = [](const SweepPoint& p, bool elbow) {
    std::printf("%-10s %8.4f %8s %8s %8s %12s %12s %14s %7.3f %8.1f%s\n", p.spec.c_str(),
                p.achieved, pct(p.top1_pruned).c_str(), pct(p.top1).c_str(), pct(p.top5).c_str(),
                with_commas(p.params).c_str(), with_commas(p.nonzero_params).c_str(),
                with_commas(p.macs).c_str(), p.finetune_epochs, p.finetune_seconds,
                elbow ? "  <- elbow" : "");
  };
  row(r.baseline, false);
  for (size_t i = 0; i < r.points.size(); ++i) row(r.points[i], static_cast<int>(i) == r.elbow);
  auto quant = [](const char* what, const std::vector<SweepQuant>& q) {
    if (q.empty()) return;
    std::printf("%s:", what);
    for (const SweepQuant& x : q) std::printf("  %s %s", x.compress.c_str(), pct(x.top1).c_str());
    std::printf("\n");
  };
  quant("baseline", r.baseline_quant);
  quant("elbow", r.elbow_quant);
}

int run_sweep(const SweepArgs& a) {
  check_args(a);
  const auto t0 = std::chrono::steady_clock::now();
  const PruneMethod method = parse_sweep_method(a.method);
  const bool tty = ::isatty(2) && !a.json;
  auto say = [](const std::string& s) {
    std::fprintf(stderr, "prune-sweep: %s\n", s.c_str());
    std::fflush(stderr);
  };
  auto train_ds = data::open_dataset(a.dataset, data::Split::kTrain);  // unknown: exit 2
  const data::DatasetInfo& info = train_ds->info();
  std::signal(SIGINT, on_sigint);

  Graph baseline;
  // Settings beside the sweep's own: what made the baseline.
  std::map<std::string, std::string> settings;
  const bool zoo = find_zoo_model(a.model) != nullptr;
  if (zoo) {
    settings["width-mult"] = num(a.width_mult);
    settings["train-epochs"] = std::to_string(a.train_epochs);
    settings["train-lr"] = num(a.train_lr);
  } else {
    settings["model-hash"] = file_hash(a.model);
  }
  if (zoo && a.resume) {
    // The baseline was trained and written by the run being resumed.
    const fs::path file = fs::path(a.output) / "baseline.onnx";
    DLAS_CHECK(fs::is_regular_file(file), ErrorKind::kInvalidInput, file.string(),
               ": missing: cannot resume");
    baseline = load_model(file.string());
  } else if (zoo) {
    ZooOptions zo;
    zo.batch = 1;
    zo.width_mult = a.width_mult;
    zo.seed = a.seed;
    baseline = build_zoo_model(a.model, zoo_options_for(info, zo));
    TrainOptions o;
    o.epochs = a.train_epochs;
    o.batch = a.batch;
    o.lr = a.train_lr;
    o.schedule = LrSchedule::kOneCycle;  // `dlas train`'s default
    o.label_smoothing = a.label_smoothing;
    o.threads = a.threads;
    o.seed = a.seed;
    o.limit = a.limit;
    o.augment = !a.no_augment;
    o.preprocess = data::default_preprocess(info, /*train=*/true);
    o.stop = &g_stop;
    o.on_progress = tty ? train_progress_printer(true, false) : nullptr;
    say(str("training the baseline ", a.model, " on ", a.dataset, " for ", a.train_epochs,
            " epochs"));
    Trainer trainer(baseline, o);
    const TrainResult r = trainer.fit(*train_ds);
    if (r.stopped) {
      std::cerr << "dlas: interrupted while training the baseline: nothing written\n";
      return 130;
    }
    baseline = trainer.graph();
  } else {
    baseline = load_model(a.model);
  }

  PruneSweepOptions o;
  o.model = a.model;
  o.dataset = a.dataset;
  o.method = method;
  o.levels = parse_levels(a.levels, method);
  o.epochs = a.epochs;
  o.train.batch = a.batch;
  o.train.lr = a.lr;
  o.train.schedule = parse_lr_schedule(a.schedule);
  o.train.label_smoothing = a.label_smoothing;
  o.train.threads = a.threads;
  o.train.seed = a.seed;
  o.train.limit = a.limit;
  o.train.augment = !a.no_augment;
  o.train.on_progress = tty ? train_progress_printer(true, false) : nullptr;
  o.test_limit = a.test_limit;
  o.tolerance = a.tolerance / 100;
  o.calibrator = a.calibrator;
  o.dir = a.output;
  o.stop = &g_stop;
  o.on_line = say;
  o.resume = a.resume;
  o.settings = settings;
  const PruneSweepRun run = run_prune_sweep(baseline, o);
  std::signal(SIGINT, SIG_DFL);
  const SweepResult& r = run.result;
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const std::string file = (fs::path(a.output) / "sweep.json").string();
  if (a.json) {
    nlohmann::ordered_json j = nlohmann::ordered_json::parse(sweep_to_json(r));
    j["dir"] = a.output;
    j["stopped"] = run.stopped;
    j["seconds"] = seconds;
    std::cout << j.dump(2) << "\n";
  } else {
    print_table(r);
    std::printf("%s sweep of %s on %s: %zu levels, %.1f s; wrote %s\n", a.method.c_str(),
                a.model.c_str(), a.dataset.c_str(), r.points.size(), seconds, file.c_str());
  }
  if (run.stopped) {
    std::cerr << "dlas: interrupted: kept the " << r.points.size() << " finished levels in " << file
              << "\n";
    return 130;
  }
  return 0;
}
#endif

#ifndef DLAS_HAVE_TORCH
// As `dlas train`: replace this process with bin/dlas-train and the arguments in canonical
// form; signals (Ctrl-C) and the exit status are the child's.
int exec_sweep(const SweepArgs& a) {
  std::string levels;
  for (double l : parse_levels(a.levels, parse_sweep_method(a.method)))
    levels += (levels.empty() ? "" : ",") + num(l);
  std::vector<std::string> args = {a.model,
                                   "--dataset",
                                   a.dataset,
                                   "--method",
                                   a.method,
                                   "--levels",
                                   levels,
                                   "--epochs",
                                   num(a.epochs),
                                   "--lr",
                                   num(a.lr),
                                   "--schedule",
                                   a.schedule,
                                   "--label-smoothing",
                                   num(a.label_smoothing),
                                   "--batch",
                                   std::to_string(a.batch),
                                   "--limit",
                                   std::to_string(a.limit),
                                   "--test-limit",
                                   std::to_string(a.test_limit),
                                   "--tolerance",
                                   num(a.tolerance),
                                   "--calibrator",
                                   a.calibrator,
                                   "--threads",
                                   std::to_string(a.threads),
                                   "--seed",
                                   std::to_string(a.seed),
                                   "--train-epochs",
                                   std::to_string(a.train_epochs),
                                   "--train-lr",
                                   num(a.train_lr),
                                   "--width-mult",
                                   num(a.width_mult),
                                   "-o",
                                   a.output};
  if (a.no_augment) args.push_back("--no-augment");
  if (a.json) args.push_back("--json");
  if (a.force) args.push_back("--force");
  if (a.resume) args.push_back("--resume");
  exec_dlas_train("prune-sweep", args);
}
#endif

}  // namespace

void add_prune_sweep_command(CLI::App& app, Action& run) {
  auto* cmd = app.add_subcommand(
      "prune-sweep",
      "The paper's iterative pruning with fine-tuning: the accuracy-vs-compression curve of a "
      "trained model (dlas engine, test split) and its elbow, written to a directory");
  auto a = std::make_shared<SweepArgs>();
  cmd->add_option("MODEL", a->model,
                  "a trained .onnx (from `dlas train`), or a zoo name with --train-epochs")
      ->required();
  cmd->add_option("--dataset", a->dataset,
                  "dataset: fashion-mnist, mnist:DIR, cifar10:DIR, folder:DIR, "
                  "synthetic[:C,H,W[:classes[:n]]]")
      ->default_val("fashion-mnist");
  cmd->add_option("--method", a->method, "weight (global magnitude, wp) or channel (cp)")
      ->required();
  cmd->add_option("--levels", a->levels,
                  "ascending fractions in (0,1), comma-separated (default: weight "
                  "0.5,0.6,0.7,0.8,0.9,0.95,0.99; channel 0.05..0.95 in 5% steps and 0.99)");
  cmd->add_option("--epochs", a->epochs,
                  "fine-tuning epochs for the WHOLE sweep, shared evenly across the levels "
                  "(fractions allowed)")
      ->default_val(1.0);
  cmd->add_option("--lr", a->lr, "fine-tuning learning rate (peak or initial)")
      ->check(CLI::PositiveNumber)
      ->default_val(0.01);
  cmd->add_option("--schedule", a->schedule, "fine-tuning schedule of each level")
      ->check(CLI::IsMember({"onecycle", "cosine", "constant"}))
      ->default_val("cosine");
  cmd->add_option("--label-smoothing", a->label_smoothing,
                  "cross entropy with label smoothing S in [0, 1) while fine-tuning (and "
                  "training a zoo baseline)")
      ->default_val(0.0);
  cmd->add_option("--batch", a->batch, "training batch size")
      ->check(CLI::Range(int64_t{2}, int64_t{65536}))
      ->default_val(128);
  cmd->add_option("--limit", a->limit, "train on the first N records only (0: all)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--test-limit", a->test_limit, "evaluate the first N test records (0: all)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--tolerance", a->tolerance,
                  "elbow: the highest level whose top-1 is within this many POINTS of the "
                  "baseline (default 1)")
      ->default_val(1.0);
  cmd->add_option("--calibrator", a->calibrator,
                  "int8 calibrator of the quantized accuracies (training images)")
      ->check(CLI::IsMember({"minmax", "percentile", "entropy", "mse"}))
      ->default_val("minmax");
  cmd->add_option("--threads", a->threads, "libtorch and engine threads")
      ->check(CLI::Range(1, 1024))
      ->default_val(1);
  cmd->add_option("--seed", a->seed, "weight initialisation, data order and augmentation seed");
  cmd->add_option("--train-epochs", a->train_epochs,
                  "zoo MODEL: train the baseline for N epochs first (as `dlas train`)")
      ->check(CLI::Range(0, 100000));
  cmd->add_option("--train-lr", a->train_lr, "zoo MODEL: the baseline's training learning rate")
      ->check(CLI::PositiveNumber)
      ->default_val(0.05);
  cmd->add_option("--width-mult", a->width_mult, "zoo MODEL: channel width multiplier")
      ->default_val(1.0);
  cmd->add_flag("--no-augment", a->no_augment, "no random crop / flip while training");
  cmd->add_flag("--json", a->json, "print sweep.json's object (plus dir, stopped, seconds)");
  cmd->add_flag("--force", a->force, "write into a non-empty directory");
  cmd->add_flag("--resume", a->resume,
                "continue the interrupted sweep in -o DIR (its sweep.json must have been made "
                "with the same settings and model): the finished levels are kept, the result is "
                "what an uninterrupted run gives");
  cmd->add_option("-o,--output", a->output,
                  "output directory: sweep.json, baseline.onnx, one .onnx per level, "
                  "elbow.onnx, curve.csv")
      ->required();
  cmd->footer(
      "Example: dlas prune-sweep resnet18-fmnist.onnx --dataset fashion-mnist --method weight "
      "--epochs 3 --threads 2 -o sweeps/resnet18-weight\n"
      "Resume after Ctrl-C: the same command with --resume");
  cmd->callback([&run, a] {
    run = [a]() -> int {
      check_args(*a);
#ifdef DLAS_HAVE_TORCH
      return run_sweep(*a);
#else
      return exec_sweep(*a);
#endif
    };
  });
}

}  // namespace dlas::cli

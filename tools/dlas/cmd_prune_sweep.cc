// `dlas prune-sweep`: the paper's iterative prune-and-fine-tune sweep of one model and method
// (dlas/torch/prune_sweep_run.h) -- the accuracy-vs-compression curve and its elbow, written
// to a directory as sweep.json (dlas/optimize/prune_sweep.h), one model per level, elbow.onnx
// and curve.csv. Like `dlas train`, bin/dlas parses and checks the arguments and execs
// bin/dlas-train, the only binary that links libtorch (tools/dlas-train/prune_sweep.cc).
#include <memory>

#include "cmd_train.h"
#include "dlas/optimize/prune_sweep.h"

namespace dlas::cli {

#ifndef DLAS_HAVE_TORCH
namespace {

std::string num(double v) { return exact_number(v); }

// As `dlas train`: replace this process with bin/dlas-train and the arguments in canonical
// form; signals (Ctrl-C) and the exit status are the child's.
int exec_sweep(const SweepArgs& a) {
  std::string levels;
  for (double l : sweep_levels_from_args(a)) levels += (levels.empty() ? "" : ",") + num(l);
  std::vector<std::string> args =
      flag_args(a.model, {{"--dataset", a.dataset},
                          {"--method", a.method},
                          {"--levels", levels},
                          {"--epochs", num(a.epochs)},
                          {"--lr", num(a.lr)},
                          {"--schedule", a.schedule},
                          {"--label-smoothing", num(a.label_smoothing)},
                          {"--batch", std::to_string(a.batch)},
                          {"--limit", std::to_string(a.limit)},
                          {"--test-limit", std::to_string(a.test_limit)},
                          {"--tolerance", num(a.tolerance)},
                          {"--calibrator", a.calibrator},
                          {"--threads", std::to_string(a.threads)},
                          {"--seed", std::to_string(a.seed)},
                          {"--train-epochs", std::to_string(a.train_epochs)},
                          {"--train-lr", num(a.train_lr)},
                          {"--width-mult", num(a.width_mult)},
                          {"-o", a.output}});
  if (a.no_augment) args.push_back("--no-augment");
  if (a.json) args.push_back("--json");
  if (a.force) args.push_back("--force");
  if (a.resume) args.push_back("--resume");
  for (const std::string& s : preprocess_arg_list(a.preprocess)) args.push_back(s);
  exec_dlas_train("prune-sweep", args);
}
}  // namespace
#endif

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
      ->check(CLI::IsMember({"auto", "minmax", "percentile", "entropy", "mse"}))
      ->default_val("auto");
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
  add_preprocess_args(*cmd, a->preprocess);
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
      check_sweep_args(*a);
#ifdef DLAS_HAVE_TORCH
      return run_sweep(*a);
#else
      return exec_sweep(*a);
#endif
    };
  });
}

}  // namespace dlas::cli

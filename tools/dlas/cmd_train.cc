// `dlas train`: trains a zoo model (adapted to the dataset) or an ONNX model with libtorch on
// the dlas graph, writes it as ONNX and reports the test-set top-1 computed by the dlas engine
// on the exported graph. bin/dlas parses the flags and execs bin/dlas-train, which runs
// tools/dlas-train/train.cc.
#include <memory>

#include "cmd_train.h"

namespace dlas::cli {

#ifndef DLAS_HAVE_TORCH
namespace {

int exec_train(const TrainArgs& a) {
  using std::to_string;
  std::vector<std::string> args =
      flag_args(a.model, {{"--dataset", a.dataset},
                          {"--width-mult", exact_number(a.width_mult)},
                          {"--epochs", exact_number(a.epochs)},
                          {"--batch", to_string(a.batch)},
                          {"--lr", exact_number(a.lr)},
                          {"--schedule", a.schedule},
                          {"--label-smoothing", exact_number(a.label_smoothing)},
                          {"--limit", to_string(a.limit)},
                          {"--test-limit", to_string(a.test_limit)},
                          {"--threads", to_string(a.threads)},
                          {"--seed", to_string(a.seed)},
                          {"-o", a.output}});
  if (!a.checkpoint.empty()) args.insert(args.end(), {"--checkpoint", a.checkpoint});
  if (a.resume) args.push_back("--resume");
  if (a.no_augment) args.push_back("--no-augment");
  if (a.json) args.push_back("--json");
  for (const std::string& s : preprocess_arg_list(a.preprocess)) args.push_back(s);
  exec_dlas_train("train", args);
}
}  // namespace
#endif

void add_train_command(CLI::App& app, Action& run) {
  auto* cmd = app.add_subcommand(
      "train",
      "Train a model (zoo, adapted to the dataset, or ONNX) with libtorch on the dlas graph; "
      "reports the test top-1 of the exported model in the dlas engine");
  auto a = std::make_shared<TrainArgs>();
  cmd->add_option("MODEL", a->model, "zoo name (see `dlas zoo`) or path to an .onnx file")
      ->required();
  cmd->add_option("--dataset", a->dataset,
                  "dataset: fashion-mnist, mnist:DIR, cifar10:DIR, folder:DIR, "
                  "synthetic[:C,H,W[:classes[:n]]]")
      ->default_val("fashion-mnist");
  cmd->add_option("--width-mult", a->width_mult, "zoo: channel width multiplier")->default_val(1.0);
  cmd->add_option("--epochs", a->epochs,
                  "training epochs; fractions allowed (2.5: round(2.5 x steps per epoch) steps, "
                  "the schedule spanning exactly those)")
      ->check(CLI::Range(0.0, 100000.0))
      ->default_val(1);
  cmd->add_option("--batch", a->batch, "batch size")
      ->check(CLI::Range(int64_t{2}, int64_t{65536}))
      ->default_val(128);
  cmd->add_option("--lr", a->lr, "peak (onecycle) or initial (cosine) learning rate")
      ->check(CLI::PositiveNumber)
      ->default_val(0.05);
  cmd->add_option("--schedule", a->schedule, "learning-rate schedule")
      ->check(CLI::IsMember({"onecycle", "cosine", "constant"}))
      ->default_val("onecycle");
  cmd->add_option("--label-smoothing", a->label_smoothing,
                  "cross entropy with label smoothing S in [0, 1): the target is 1 - S on the "
                  "label plus S / classes on every class")
      ->default_val(0.0);
  cmd->add_option("--limit", a->limit, "train on the first N records only (0: all)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--test-limit", a->test_limit, "evaluate the first N test records (0: all)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--threads", a->threads, "libtorch and engine threads")
      ->check(CLI::Range(1, 1024))
      ->default_val(1);
  cmd->add_option("--seed", a->seed, "weight initialisation, data order and augmentation seed");
  cmd->add_option("--checkpoint", a->checkpoint,
                  "checkpoint file, written after every epoch and on Ctrl-C");
  cmd->add_flag("--resume", a->resume, "continue from --checkpoint");
  cmd->add_flag("--no-augment", a->no_augment, "no random crop / flip");
  cmd->add_flag("--json", a->json, "print one JSON object (top1, top5, samples, epoch_stats, ...)");
  add_preprocess_args(*cmd, a->preprocess);
  cmd->add_option("-o,--output", a->output, "output .onnx path")->required();
  cmd->footer(
      "Example: dlas train resnet18-cifar --dataset fashion-mnist --width-mult 0.5 --epochs 3 "
      "--threads 2 -o resnet18-fmnist.onnx");
  cmd->callback([&run, a] {
    run = [a]() -> int {
      DLAS_CHECK(!a->resume || !a->checkpoint.empty(), ErrorKind::kUsage,
                 "--resume needs --checkpoint FILE");
      DLAS_CHECK(a->epochs > 0, ErrorKind::kUsage, "--epochs ", a->epochs, " must be > 0");
      DLAS_CHECK(a->label_smoothing >= 0 && a->label_smoothing < 1, ErrorKind::kUsage,
                 "--label-smoothing ", a->label_smoothing, " is outside [0, 1)");
      parse_preprocess_args(a->preprocess);  // bad values fail before the exec
#ifdef DLAS_HAVE_TORCH
      return run_train(*a);
#else
      return exec_train(*a);
#endif
    };
  });
}

}  // namespace dlas::cli

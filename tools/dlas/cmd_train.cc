// `dlas train`: trains a zoo model (adapted to the dataset) or an ONNX model with libtorch on
// the dlas graph, writes it as ONNX and reports the test-set top-1 computed by the dlas engine
// on the exported graph.
#include <sys/ioctl.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>

#include "cli.h"
#include "dlas/data/dataset.h"
#include "dlas/model/onnx.h"
#include "dlas/model/zoo.h"

#ifdef DLAS_HAVE_TORCH
#include "dlas/model/train.h"
#endif

namespace dlas::cli {

namespace {

struct TrainArgs {
  std::string model;
  std::string dataset = "fashion-mnist";
  double width_mult = 1.0;
  double epochs = 1;  // fractions allowed: round(epochs x steps per epoch) steps
  int64_t batch = 128;
  double lr = 0.05;
  std::string schedule = "onecycle";
  double label_smoothing = 0;
  int64_t limit = 0;
  int64_t test_limit = 0;
  int threads = 1;
  uint64_t seed = 0;
  std::string checkpoint;
  bool resume = false;
  bool json = false;
  bool no_augment = false;
  std::string output;
};

#ifdef DLAS_HAVE_TORCH
std::atomic<bool> g_stop{false};
void on_sigint(int) { g_stop.store(true); }

std::string clock_text(double s) {
  if (!(s >= 0) || s > 1e7) return "?";
  int64_t t = static_cast<int64_t>(s + 0.5);
  char buf[32];
  if (t >= 3600) {
    std::snprintf(buf, sizeof buf, "%lld:%02lld:%02lld", static_cast<long long>(t / 3600),
                  static_cast<long long>(t / 60 % 60), static_cast<long long>(t % 60));
  } else {
    std::snprintf(buf, sizeof buf, "%lld:%02lld", static_cast<long long>(t / 60),
                  static_cast<long long>(t % 60));
  }
  return buf;
}

// A bar on a TTY (redrawn at most 5 times a second), plain lines otherwise (every ~10% of an
// epoch and at its end).
std::function<void(const TrainProgress&)> progress_printer(bool tty, bool quiet) {
  using Clock = std::chrono::steady_clock;
  auto last = std::make_shared<Clock::time_point>();
  return [tty, quiet, last](const TrainProgress& p) {
    if (quiet) return;
    const std::string stats = str("epoch ", p.epoch + 1, "/", p.epochs, " step ", p.step, "/",
                                  p.steps_per_epoch, " loss ", std::to_string(p.loss).substr(0, 6),
                                  " acc ", std::to_string(100 * p.accuracy).substr(0, 5), "% ",
                                  static_cast<int64_t>(p.images_per_second), " img/s lr ", p.lr,
                                  " ETA ", clock_text(p.eta_seconds));
    if (tty) {
      const auto now = Clock::now();
      if (!p.epoch_done && now - *last < std::chrono::milliseconds(200)) return;
      *last = now;
      constexpr int kBar = 20;
      const int filled = static_cast<int>(kBar * p.step / std::max<int64_t>(1, p.steps_per_epoch));
      std::string line = "[" + std::string(static_cast<size_t>(filled), '#') +
                         std::string(static_cast<size_t>(kBar - filled), '.') + "] " + stats;
      winsize ws{};
      size_t width = 100;
      if (::ioctl(2, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 20) width = ws.ws_col;
      if (line.size() > width - 1) line.resize(width - 1);
      std::fprintf(stderr, "\r\033[K%s%s", line.c_str(), p.epoch_done ? "\n" : "");
    } else {
      const int64_t every = std::max<int64_t>(1, p.steps_per_epoch / 10);
      if (!p.epoch_done && p.step % every != 0) return;
      std::fprintf(stderr, "train: %s\n", stats.c_str());
    }
    std::fflush(stderr);
  };
}

int run_train(const TrainArgs& a) {
  DLAS_CHECK(!a.output.empty(), ErrorKind::kUsage, "-o: an output .onnx path is required");
  auto train_ds = data::open_dataset(a.dataset, data::Split::kTrain);
  const data::DatasetInfo& info = train_ds->info();
  data::Preprocess train_pre = data::default_preprocess(info, /*train=*/true);
  const std::vector<int64_t> chw = train_pre.output_shape(info);
  Graph graph;
  if (find_zoo_model(a.model) != nullptr) {
    ZooOptions zo;
    zo.batch = 1;
    zo.in_channels = chw.at(0);
    DLAS_CHECK(chw.at(1) == chw.at(2), ErrorKind::kInvalidInput, "dataset '", a.dataset,
               "': zoo models take square images, the preprocessed ones are ", chw[1], "x", chw[2]);
    zo.image_size = chw.at(1);
    zo.num_classes = info.classes;
    zo.width_mult = a.width_mult;
    zo.seed = a.seed;
    graph = build_zoo_model(a.model, zo);
  } else {
    DLAS_CHECK(a.width_mult == 1.0, ErrorKind::kUsage,
               "--width-mult applies to zoo models only, not '", a.model, "'");
    graph = load_model(a.model);
  }
  TrainOptions o;
  o.epochs = a.epochs;
  o.batch = a.batch;
  o.lr = a.lr;
  o.schedule = parse_lr_schedule(a.schedule);
  o.label_smoothing = a.label_smoothing;
  o.threads = a.threads;
  o.seed = a.seed;
  o.limit = a.limit;
  o.augment = !a.no_augment;
  o.preprocess = train_pre;
  o.checkpoint = a.checkpoint;
  o.resume = a.resume;
  o.stop = &g_stop;
  // --json keeps stdout for the one JSON object; progress still goes to stderr (plain
  // lines, ten per epoch), so a long run is never silent.
  const bool tty = ::isatty(2) && !a.json;
  o.on_progress = progress_printer(tty, /*quiet=*/false);
  Trainer trainer(graph, o);
  std::signal(SIGINT, on_sigint);
  TrainResult r = trainer.fit(*train_ds);
  std::signal(SIGINT, SIG_DFL);
  if (r.stopped) {
    std::cerr << "dlas: interrupted after " << r.global_step << " steps"
              << (a.checkpoint.empty() ? " (no --checkpoint: progress is lost)"
                                       : "; resume with --checkpoint " + a.checkpoint + " --resume")
              << "\n";
    return 130;
  }
  Graph trained = trainer.graph();
  export_onnx_file(trained, a.output);
  // The test-set accuracy of what was exported, computed by the engine.
  auto test_ds = data::open_dataset(a.dataset, data::Split::kTest);
  const auto t0 = std::chrono::steady_clock::now();
  data::Accuracy acc =
      engine_accuracy(trained, *test_ds, data::default_preprocess(test_ds->info(), false),
                      /*batch=*/100, a.threads, a.test_limit);
  const double eval_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  double train_s = 0;
  for (const EpochStats& e : r.epochs) train_s += e.seconds;
  if (a.json) {
    nlohmann::json j;
    j["model"] = a.model;
    j["dataset"] = a.dataset;
    j["width_mult"] = a.width_mult;
    j["epochs"] = a.epochs;
    j["batch"] = a.batch;
    j["lr"] = a.lr;
    j["schedule"] = a.schedule;
    j["label_smoothing"] = a.label_smoothing;
    j["seed"] = a.seed;
    j["threads"] = a.threads;
    j["limit"] = a.limit;
    j["steps"] = r.global_step;
    j["train_seconds"] = train_s;
    j["eval_seconds"] = eval_s;
    nlohmann::json ep = nlohmann::json::array();
    for (const EpochStats& e : r.epochs) {
      ep.push_back({{"epoch", e.epoch + 1},
                    {"loss", e.loss},
                    {"train_accuracy", e.accuracy},
                    {"seconds", e.seconds},
                    {"samples", e.samples}});
    }
    j["epoch_stats"] = ep;
    j["top1"] = acc.top1_rate();
    j["top5"] = acc.top5_rate();
    j["samples"] = acc.samples;
    j["params"] = trained.param_count();
    j["output"] = a.output;
    std::cout << j.dump(2) << "\n";
  } else {
    std::printf("trained %s on %s: %g epochs, %lld steps, %.1f s (%.1f s/epoch)\n", a.model.c_str(),
                a.dataset.c_str(), a.epochs, static_cast<long long>(r.global_step), train_s,
                r.epochs.empty() ? 0.0 : train_s / static_cast<double>(r.epochs.size()));
    std::printf("test top-1 %.2f%%  top-5 %.2f%%  (%lld images, dlas engine, %.1f s)\n",
                100 * acc.top1_rate(), 100 * acc.top5_rate(), static_cast<long long>(acc.samples),
                eval_s);
    std::printf("wrote %s (%s params)\n", a.output.c_str(),
                with_commas(trained.param_count()).c_str());
  }
  return 0;
}
#endif

#ifndef DLAS_HAVE_TORCH
int exec_train(const TrainArgs& a) {
  using std::to_string;
  std::vector<std::string> args = {a.model,
                                   "--dataset",
                                   a.dataset,
                                   "--width-mult",
                                   exact_number(a.width_mult),
                                   "--epochs",
                                   exact_number(a.epochs),
                                   "--batch",
                                   to_string(a.batch),
                                   "--lr",
                                   exact_number(a.lr),
                                   "--schedule",
                                   a.schedule,
                                   "--label-smoothing",
                                   exact_number(a.label_smoothing),
                                   "--limit",
                                   to_string(a.limit),
                                   "--test-limit",
                                   to_string(a.test_limit),
                                   "--threads",
                                   to_string(a.threads),
                                   "--seed",
                                   to_string(a.seed),
                                   "-o",
                                   a.output};
  if (!a.checkpoint.empty()) args.insert(args.end(), {"--checkpoint", a.checkpoint});
  if (a.resume) args.push_back("--resume");
  if (a.no_augment) args.push_back("--no-augment");
  if (a.json) args.push_back("--json");
  exec_dlas_train("train", args);
}
#endif

}  // namespace

#ifdef DLAS_HAVE_TORCH
std::function<void(const TrainProgress&)> train_progress_printer(bool tty, bool quiet) {
  return progress_printer(tty, quiet);
}
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
#ifdef DLAS_HAVE_TORCH
      return run_train(*a);
#else
      return exec_train(*a);
#endif
    };
  });
}

}  // namespace dlas::cli

// `dlas train` with libtorch (bin/dlas-train): trains the model on the dlas graph, writes it as
// ONNX and reports the test-set top-1 of the exported graph computed by the dlas engine.
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>

#include "cmd_train.h"
#include "dlas/core/progress.h"
#include "dlas/data/dataset.h"
#include "dlas/model/onnx.h"
#include "dlas/model/zoo.h"
#include "dlas/system/accuracy.h"
#include "dlas/torch/train.h"

namespace dlas::cli {

namespace {

std::atomic<bool> g_stop{false};
void on_sigint(int) { g_stop.store(true); }

void print_result(const TrainArgs& a, const TrainResult& r, const Graph& trained,
                  const data::Accuracy& acc, double eval_s) {
  double train_s = 0;
  for (const EpochStats& e : r.epochs) train_s += e.seconds;
  if (!a.json) {
    std::printf("trained %s on %s: %g epochs, %lld steps, %.1f s (%.1f s/epoch)\n", a.model.c_str(),
                a.dataset.c_str(), a.epochs, static_cast<long long>(r.global_step), train_s,
                r.epochs.empty() ? 0.0 : train_s / static_cast<double>(r.epochs.size()));
    std::printf("test top-1 %.2f%%  top-5 %.2f%%  (%lld images, dlas engine, %.1f s)\n",
                100 * acc.top1_rate(), 100 * acc.top5_rate(), static_cast<long long>(acc.samples),
                eval_s);
    std::printf("wrote %s (%s params)\n", a.output.c_str(),
                with_commas(trained.param_count()).c_str());
    return;
  }
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
}

}  // namespace

std::function<void(const TrainProgress&)> train_progress_printer(bool tty) {
  auto bar = std::make_shared<Progress>(Progress::Options{.tty = tty, .label = "train"});
  return [bar](const TrainProgress& p) {
    const std::string stats = str("epoch ", p.epoch + 1, "/", p.epochs, " step ", p.step, "/",
                                  p.steps_per_epoch, " loss ", std::to_string(p.loss).substr(0, 6),
                                  " acc ", std::to_string(100 * p.accuracy).substr(0, 5), "% ",
                                  static_cast<int64_t>(p.images_per_second), " img/s lr ", p.lr,
                                  " ETA ", duration_text(p.eta_seconds));
    bar->update(p.step, p.steps_per_epoch, stats, /*force=*/p.epoch_done);
    if (p.epoch_done) bar->finish(/*keep=*/true);
  };
}

TrainOptions train_options(const TrainArgs& a, const data::DatasetInfo& info, const Graph& model,
                           const std::atomic<bool>* stop,
                           std::function<void(const TrainProgress&)> on_progress) {
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
  // The model's metadata holds the preprocessing in force (model_to_train); training adds the
  // dataset's augmentation.
  o.preprocess = resolve_preprocess(info, {}, &model, a.model, /*train=*/true).pre;
  o.checkpoint = a.checkpoint;
  o.resume = a.resume;
  o.stop = stop;
  o.on_progress = std::move(on_progress);
  return o;
}

Graph model_to_train(const TrainArgs& a, const data::DatasetInfo& info) {
  Graph g;
  const bool zoo = find_zoo_model(a.model) != nullptr;
  if (!zoo) {
    DLAS_CHECK(a.width_mult == 1.0, ErrorKind::kUsage,
               "--width-mult applies to zoo models only, not '", a.model, "'");
    g = load_model(a.model);
  } else {
    ZooOptions zo;
    zo.batch = 1;
    zo.width_mult = a.width_mult;
    zo.seed = a.seed;
    // Built for the images the flags make (--resize, --center-crop change their size).
    const std::vector<int64_t> s =
        resolve_preprocess(info, parse_preprocess_args(a.preprocess), nullptr)
            .pre.output_shape(info);
    if (s[1] == s[2]) zo.image_size = s[1];
    g = build_zoo_model(a.model, zoo_options_for(info, zo));
  }
  // A zoo model is built for the dataset's default here: no warning for it.
  apply_preprocess_args(g, info, a.preprocess, a.model, /*train=*/true, /*warn=*/!zoo);
  return g;
}

int run_train(const TrainArgs& a) {
  DLAS_CHECK(!a.output.empty(), ErrorKind::kUsage, "-o: an output .onnx path is required");
  auto train_ds = data::open_dataset(a.dataset, data::Split::kTrain);
  const data::DatasetInfo& info = train_ds->info();
  // --json keeps stdout for the one JSON object; progress still goes to stderr (plain
  // lines, ten per epoch), so a long run is never silent.
  Graph model = model_to_train(a, info);
  TrainOptions options =
      train_options(a, info, model, &g_stop, train_progress_printer(progress_tty(a.json)));
  Trainer trainer(std::move(model), std::move(options));
  std::signal(SIGINT, on_sigint);
  const TrainResult r = trainer.fit(*train_ds);
  std::signal(SIGINT, SIG_DFL);
  if (r.stopped) {
    std::cerr << "dlas: interrupted after " << r.global_step << " steps"
              << (a.checkpoint.empty() ? " (no --checkpoint: progress is lost)"
                                       : "; resume with --checkpoint " + a.checkpoint + " --resume")
              << "\n";
    return 130;
  }
  Graph trained = trainer.graph();
  const data::Preprocess test_pre =
      resolve_preprocess(info, {}, &trained, a.model, /*train=*/false).pre;
  set_preprocess_metadata(trained, test_pre);  // the exported model carries it
  export_onnx_file(trained, a.output);
  // The test-set accuracy of what was exported, computed by the engine.
  auto test_ds = data::open_dataset(a.dataset, data::Split::kTest);
  const auto t0 = std::chrono::steady_clock::now();
  const data::Accuracy acc =
      engine_accuracy(trained, *test_ds, test_pre,
                      /*batch=*/100, a.threads, a.test_limit);
  const double eval_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  print_result(a, r, trained, acc, eval_s);
  return 0;
}

}  // namespace dlas::cli

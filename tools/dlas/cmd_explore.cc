// dlas explore: the best deployment of a trained model on this machine under an accuracy
// budget (src/study/explore*.cc do the work), and its hidden scoring child.
#include <cstdio>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>

#include "cli.h"
#include "dlas/core/error.h"
#include "dlas/core/progress.h"
#include "dlas/study/explore.h"
#include "dlas/system/tune_model.h"

namespace dlas::cli {
namespace {

struct ExploreArgs {
  std::string model, dataset, metric = "top1", budget = "30m", space, output;
  double max_drop = -1;  // -1: not given
  int threads = 0, repeat = 30, rounds = 3;
  uint64_t seed = 1;
  double timeout_s = 600;
  bool resume = false, json = false, no_finetune = false;
  PreprocessArgs preprocess;
};

double parse_duration(const std::string& text) {
  tune::Budget b;
  try {
    b = tune::parse_budget(text);
  } catch (const Error&) {
    fail(ErrorKind::kUsage, "--budget '", text, "': expected a duration such as 90s, 30m or 2h");
  }
  DLAS_CHECK(b.seconds > 0 && b.trials == 0, ErrorKind::kUsage, "--budget '", text,
             "': expected a duration such as 90s, 30m or 2h");
  return b.seconds;
}

void add_score_child(CLI::App& ex, Action& run) {
  auto* x = ex.add_subcommand("exec-score", "");
  x->group("");  // hidden: the scoring child of the search
  auto a = std::make_shared<study::ScoreChildArgs>();
  auto pre = std::make_shared<PreprocessArgs>();
  x->add_option("--model", a->model_path)->required();
  x->add_option("--compress", a->compress)->required();
  x->add_option("--dataset", a->dataset)->required();
  x->add_option("--conv-algo", a->conv_algo);
  x->add_option("--layout", a->layout);
  x->add_option("--backend", a->backend);
  x->add_option("--records", a->records);
  x->add_option("--threads", a->threads);
  x->add_option("--begin", a->begin)->required();
  x->add_option("--end", a->end)->required();
  x->add_option("--seed", a->seed);
  add_preprocess_args(*x, *pre);
  x->callback([&run, a, pre] {
    run = [a, pre] {
      study::ScoreChildArgs args = *a;
      args.preprocess = parse_preprocess_args(*pre);
      std::cout << study::run_score_child(args) << std::endl;
      return 0;
    };
  });
}

}  // namespace

void add_explore_command(CLI::App& app, Action& run) {
  auto* cmd = app.add_subcommand(
      "explore",
      "Find the fastest deployment of a trained model on this machine within an accuracy "
      "budget: compressions (int8 with each calibrator, fp16, bf16, pruning, fine-tuned pruning "
      "levels, compositions), conv algorithms, layouts, oneDNN and the installed peer engines, "
      "and a short tune, searched with latency first and accuracy raced on growing samples of "
      "the test split (docs/explore.md). Writes DIR/explore.json, best.onnx, README.md (the "
      "reproduce commands), report.html and explore.db (a study store)");
  auto a = std::make_shared<ExploreArgs>();
  // Not ->required(): the hidden exec-score child below takes none of them.
  cmd->add_option("MODEL", a->model, "the trained model (.onnx); required");
  cmd->add_option("--dataset", a->dataset, "labelled dataset the model was trained for; required");
  cmd->add_option("--max-drop", a->max_drop,
                  "accuracy budget: points of the metric the deployment may lose against the "
                  "dense model; required");
  cmd->add_option("--metric", a->metric, "top1 (default) or top5");
  cmd->add_option("--threads", a->threads, "threads of every deployment (0: every logical CPU)")
      ->check(CLI::Range(0, 1024));
  cmd->add_option("--budget", a->budget,
                  "wall-clock limit of the whole search (default 30m); when it runs out the "
                  "answer is the best confirmed so far");
  cmd->add_option("--space", a->space,
                  "TOML file narrowing or widening the default space ([space] compress, "
                  "conv_algo, layout, backend, tuning; [explore] weight_levels, channel_levels, "
                  "finetune_epochs, finetune_all, finetuned_quant, tune_top)");
  cmd->add_flag("--no-finetune", a->no_finetune,
                "leave out the fine-tuned pruning levels (no training)");
  cmd->add_option("--repeat", a->repeat, "timed runs per candidate (default 30)")
      ->check(CLI::Range(1, 100000));
  cmd->add_option("--rounds", a->rounds, "interleaved rounds of the final comparison (default 3)")
      ->check(CLI::Range(1, 100));
  cmd->add_option("--seed", a->seed, "seed of the test split's random order (default 1)");
  cmd->add_option("--timeout", a->timeout_s, "seconds one measurement may take (default 600)");
  cmd->add_flag("--resume", a->resume,
                "continue the exploration in DIR (after an interruption, or with other "
                "settings): nothing stored is measured again");
  cmd->add_flag("--json", a->json, "print explore.json's recommendation as one JSON object");
  cmd->add_option("-o,--output", a->output, "output folder DIR; required");
  add_preprocess_args(*cmd, a->preprocess);
  add_score_child(*cmd, run);
  cmd->callback([&run, a, cmd] {
    if (cmd->got_subcommand("exec-score")) return;
    run = [a] {
      DLAS_CHECK(!a->model.empty(), ErrorKind::kUsage, "explore: MODEL is required");
      DLAS_CHECK(!a->dataset.empty(), ErrorKind::kUsage, "explore: --dataset is required");
      DLAS_CHECK(a->max_drop != -1, ErrorKind::kUsage,
                 "explore: --max-drop is required (points of accuracy the deployment may lose)");
      DLAS_CHECK(!a->output.empty(), ErrorKind::kUsage, "explore: -o DIR is required");
      study::ExploreOptions o;
      o.model = a->model;
      o.dataset = a->dataset;
      o.metric = study::parse_explore_metric(a->metric);
      DLAS_CHECK(a->max_drop >= 0, ErrorKind::kUsage, "--max-drop ", a->max_drop,
                 ": the budget is a number of points >= 0");
      o.max_drop = a->max_drop;
      o.threads = a->threads;
      o.budget_s = parse_duration(a->budget);
      o.preprocess = parse_preprocess_args(a->preprocess);
      o.space = study::default_explore_space(!a->no_finetune);
      if (!a->space.empty()) o.space = study::read_explore_space(a->space, o.space);
      if (a->no_finetune) {
        o.space.weight_levels.clear();
        o.space.channel_levels.clear();
      }
      o.out_dir = a->output;
      o.resume = a->resume;
      o.exe = "/proc/self/exe";
      o.repeat = a->repeat;
      o.final_rounds = a->rounds;
      o.seed = a->seed;
      o.timeout_s = a->timeout_s;
      const study::ExploreResult r =
          study::explore(o, [](const std::string& line) { progress_message(line); });
      const auto& rec = r.candidates[static_cast<size_t>(r.recommendation)];
      if (a->json) {
        nlohmann::ordered_json j;
        j["recommendation"] = rec.label;
        j["median_ms"] = rec.median_ms;
        j["dense_ms"] = r.candidates[static_cast<size_t>(r.dense)].median_ms;
        j["output"] = a->output;
        j["seconds"] = r.seconds;
        std::cout << j.dump() << std::endl;
      } else {
        std::printf("recommendation: %s (%.3f ms; dense %.3f ms); %s/README.md\n",
                    rec.label.c_str(), rec.median_ms,
                    r.candidates[static_cast<size_t>(r.dense)].median_ms, a->output.c_str());
      }
      return 0;
    };
  });
}

}  // namespace dlas::cli

// dlas bench: latency of one Variant, measured like TVM's time_evaluator and
// TFLite's benchmark_model: the first run timed on its own, warm-up runs
// discarded, then --repeat repeats of --number back-to-back runs each (number
// grown until a repeat lasts --min-repeat-ms); the median is the headline.
#include <unistd.h>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>
#include <thread>

#include "cli.h"
#include "dlas/core/error.h"
#include "dlas/system/measure.h"
#include "dlas/system/onednn_backend.h"

namespace dlas::cli {
namespace {

struct BenchArgs {
  int warmup = 1, repeat = 150, number = 1;
  double min_repeat_ms = 0;
  bool json = false, times = false;
  uint64_t input_seed = 0;
  std::string backend = "dlas";
};

}  // namespace

void add_bench_command(CLI::App& app, Action& run) {
  auto* cmd = app.add_subcommand("bench", "Measure a model's latency on the compiled engine");
  auto model = std::make_shared<ModelArgs>();
  auto engine = std::make_shared<EngineArgs>();
  auto b = std::make_shared<BenchArgs>();
  add_model_args(*cmd, *model);
  add_engine_args(*cmd, *engine);
  cmd->add_option("--warmup", b->warmup, "discarded runs before timing")
      ->default_val(1)
      ->check(CLI::Range(0, 1000000));
  cmd->add_option("--repeat", b->repeat, "timed repeats (the paper's 150)")
      ->default_val(150)
      ->check(CLI::Range(1, 1000000));
  cmd->add_option("--number", b->number, "runs per repeat (each repeat reports their mean)")
      ->default_val(1)
      ->check(CLI::Range(1, 1000000));
  cmd->add_option("--min-repeat-ms", b->min_repeat_ms,
                  "grow --number until one repeat lasts at least this long")
      ->default_val(0)
      ->check(CLI::Range(0.0, 1e6));
  cmd->add_option("--input-seed", b->input_seed, "seed of the random input");
  cmd->add_option("--backend", b->backend,
                  "dlas (the compiled engine) or onednn (each layer a oneDNN primitive; "
                  "--conv-algo/--layers/--isa do not apply)")
      ->default_val("dlas")
      ->check(CLI::IsMember({"dlas", "onednn"}));
  cmd->add_flag("--json", b->json, "print one JSON object");
  cmd->add_flag("--times", b->times, "with --json: add every repeat's time as \"times_ms\"");
  cmd->callback([&run, model, engine, b] {
    run = [model, engine, b] {
      compress_name(engine->compress);  // a bad spec fails before the model loads
      Graph g = load_model_from_args(*model);
      const std::string compress = apply_compress(g, engine->compress);
      const PlanOptions options = plan_options_from_args(*engine, &g);
      auto t0 = std::chrono::steady_clock::now();
      // The measured thing: the compiled plan, or the oneDNN backend on the same graph.
      std::unique_ptr<Plan> plan;
      std::unique_ptr<OnednnExecutor> onednn;
      if (b->backend == "onednn")
        onednn = std::make_unique<OnednnExecutor>(
            g, options.threads > 0
                   ? options.threads
                   : static_cast<int>(std::max(1u, std::thread::hardware_concurrency())));
      else
        plan = std::make_unique<Plan>(g, options);
      const double compile_ms = ms_since(t0);
      Variant variant;
      if (plan) {
        variant = variant_from_args(*model, *engine, *plan);
      } else {
        variant.model = model->model;
        variant.batch = model->batch;
        variant.compress = compress;
        variant.backend = "onednn";
        variant.conv_algo = "onednn";
        variant.opt_level = 0;
        variant.isa = "onednn";
        variant.threads = onednn->threads();
      }
      std::vector<Tensor> in;
      for (size_t i = 0; i < g.inputs.size(); ++i)
        in.push_back(random_input(g.inputs[i], b->input_seed + i));
      std::vector<Tensor> out = plan ? plan->make_outputs() : std::vector<Tensor>{};
      auto run_once = [&] {
        if (plan)
          plan->run_into(in, out);
        else
          out = onednn->run(in);
      };

      t0 = std::chrono::steady_clock::now();
      run_once();
      const double first_ms = ms_since(t0);
      for (int i = 0; i < b->warmup; ++i) run_once();
      int number = b->number;
      if (b->min_repeat_ms > 0) {  // TVM's rule: scale number so one repeat lasts min_repeat_ms
        for (;;) {
          t0 = std::chrono::steady_clock::now();
          for (int i = 0; i < number; ++i) run_once();
          const double ms = ms_since(t0);
          if (ms >= b->min_repeat_ms || number >= (1 << 20)) break;
          number = std::max(number * 2,
                            static_cast<int>(number * b->min_repeat_ms / std::max(ms, 1e-3) * 1.1));
        }
      }
      const bool tty = isatty(fileno(stderr)) && !b->json;
      std::vector<double> times;
      times.reserve(static_cast<size_t>(b->repeat));
      auto last_report = std::chrono::steady_clock::now();
      for (int r = 0; r < b->repeat; ++r) {
        t0 = std::chrono::steady_clock::now();
        for (int i = 0; i < number; ++i) run_once();
        times.push_back(ms_since(t0) / number);
        if (tty && ms_since(last_report) > 250) {
          last_report = std::chrono::steady_clock::now();
          std::fprintf(stderr, "\rbench: %d/%d repeats", r + 1, b->repeat);
        }
      }
      if (tty) std::fprintf(stderr, "\r%40s\r", "");

      double mean = 0, var = 0;
      for (double t : times) mean += t;
      mean /= static_cast<double>(times.size());
      for (double t : times) var += (t - mean) * (t - mean);
      const double std_ms =
          times.size() > 1 ? std::sqrt(var / static_cast<double>(times.size() - 1)) : 0.0;
      const double cv = mean > 0 ? std_ms / mean : 0.0;
      const double median = percentile(times, 0.5);
      const int64_t macs = plan ? plan->graph().macs() : g.macs();
      const MemoryReport mem = plan ? plan->memory() : MemoryReport{};
      if (cv > 0.05)
        std::fprintf(stderr,
                     "warning: CV %.1f%% > 5%%: the machine is noisy; use more --repeat or "
                     "--min-repeat-ms, and compare ratios measured side by side\n",
                     cv * 100);
      nlohmann::ordered_json j;
      j["variant"] = variant.str();
      j["variant_hash"] = variant.hash_hex();
      j["model"] = model->model;
      j["compress"] = variant.compress;
      j["median_ms"] = median;
      j["mean_ms"] = mean;
      j["min_ms"] = *std::min_element(times.begin(), times.end());
      j["max_ms"] = *std::max_element(times.begin(), times.end());
      j["p10_ms"] = percentile(times, 0.1);
      j["p90_ms"] = percentile(times, 0.9);
      j["std_ms"] = std_ms;
      j["cv"] = cv;
      j["first_ms"] = first_ms;
      j["compile_ms"] = compile_ms;
      j["repeat"] = b->repeat;
      j["number"] = number;
      j["warmup"] = b->warmup;
      j["threads"] = variant.threads;
      j["backend"] = b->backend;
      j["batch"] = model->batch;
      j["isa"] = variant.isa;
      j["isa_emulated"] = variant.isa_emulated;
      j["macs"] = macs;
      j["gflops"] = 2.0 * static_cast<double>(macs) / (median * 1e6);
      j["arena_bytes"] = mem.arena_bytes;
      j["weight_bytes"] = mem.weight_bytes;
      j["packed_weight_bytes"] = mem.packed_weight_bytes;
      j["workspace_bytes"] = mem.workspace_bytes;
      if (b->times) j["times_ms"] = times;  // for drivers that pool repeats across rounds
      if (b->json) {
        std::cout << j.dump(2) << "\n";
        return 0;
      }
      std::printf("%s\n", variant.str().c_str());
      std::printf(
          "median %.3f ms  (mean %.3f  min %.3f  max %.3f  p10 %.3f  p90 %.3f  std %.3f  CV "
          "%.1f%%)\n",
          median, mean, j["min_ms"].get<double>(), j["max_ms"].get<double>(),
          j["p10_ms"].get<double>(), j["p90_ms"].get<double>(), std_ms, cv * 100);
      std::printf("first run %.3f ms, compile %.1f ms, %d repeats x %d runs, %.1f GFLOP/s\n",
                  first_ms, compile_ms, b->repeat, number, j["gflops"].get<double>());
      if (plan)
        std::printf(
            "memory: activations %.2f MiB (unplanned %.2f), weights %.2f MiB (packed %.2f), "
            "workspace %.2f MiB\n",
            mem.arena_bytes / 1048576.0, mem.unplanned_bytes / 1048576.0,
            mem.weight_bytes / 1048576.0, mem.packed_weight_bytes / 1048576.0,
            mem.workspace_bytes / 1048576.0);
      return 0;
    };
  });
}

}  // namespace dlas::cli

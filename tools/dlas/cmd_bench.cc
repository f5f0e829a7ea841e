// dlas bench: latency of one Variant, measured like TVM's time_evaluator and
// TFLite's benchmark_model: the first run timed on its own, warm-up runs
// discarded, then --repeat repeats of --number back-to-back runs each (number
// grown until a repeat lasts --min-repeat-ms); the median is the headline.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>

#include "cli.h"
#include "dlas/system/make_executor.h"
#include "dlas/system/measure.h"

namespace dlas::cli {
namespace {

struct BenchArgs {
  int warmup = 1, repeat = 150, number = 1;
  double min_repeat_ms = 0;
  bool json = false, times = false;
  uint64_t input_seed = 0;
  std::string backend = "dlas";
};

// Bytes, or null where the backend cannot see the buffer.
nlohmann::json bytes_json(int64_t bytes) {
  return bytes == kUnknownBytes ? nlohmann::json() : nlohmann::json(bytes);
}

void print_bench(const CompiledModel& c, const BenchArgs& b, const LatencyStats& st) {
  const Variant& v = c.variant;
  const std::vector<std::string> slow = reference_steps(*c.executor);
  if (!slow.empty())
    std::fprintf(stderr, "warning: %s; `dlas profile` shows their time\n",
                 reference_steps_line(slow).c_str());
  const int64_t macs = c.executor->macs();
  const MemoryReport mem = c.executor->memory();
  const double gflops = 2.0 * static_cast<double>(macs) / (st.median_ms * 1e6);
  if (st.cv > 0.05)
    std::fprintf(stderr,
                 "warning: CV %.1f%% > 5%%: the machine is noisy; use more --repeat or "
                 "--min-repeat-ms, and compare ratios measured side by side\n",
                 st.cv * 100);
  if (b.json) {
    nlohmann::ordered_json j;
    j["variant"] = v.str();
    j["variant_hash"] = v.hash_hex();
    j["model"] = v.model;
    j["compress"] = v.compress;
    j["median_ms"] = st.median_ms;
    j["mean_ms"] = st.mean_ms;
    j["min_ms"] = st.min_ms;
    j["max_ms"] = st.max_ms;
    j["p10_ms"] = st.p10_ms;
    j["p90_ms"] = st.p90_ms;
    j["std_ms"] = st.std_ms;
    j["cv"] = st.cv;
    j["first_ms"] = st.first_ms;
    j["compile_ms"] = c.compile_ms;
    j["repeat"] = b.repeat;
    j["number"] = st.number;
    j["warmup"] = b.warmup;
    j["threads"] = v.threads;
    j["backend"] = v.backend;
    j["batch"] = v.batch;
    j["isa"] = v.isa;
    j["isa_emulated"] = v.isa_emulated;
    // The layout mode, and how many layers ran blocked and how many reorders the plan has.
    j["layout"] = v.backend == "dlas" ? v.layout : v.backend;
    if (const auto* plan = dynamic_cast<const Plan*>(c.executor.get())) {
      int64_t blocked = 0, reorders = 0, emulated = 0;
      for (const StepInfo& s : plan->steps()) {
        reorders += s.op == "Reorder";
        blocked += s.op != "Reorder" && is_blocked(s.layout);
        emulated += s.kernel.find("[emulated]") != std::string::npos;
      }
      j["blocked_steps"] = blocked;
      j["reorders"] = reorders;
      j["reference_steps"] = slow.size();
      // 16-bit convs computed in f32 on widened values: this ISA path has no unit for them.
      j["emulated_steps"] = emulated;
    }
    j["profile"] = c.profile;
    j["device"] = v.device;
    if (st.device_median_ms >= 0) {
      // On a GPU: median_ms and the rest are end to end (copies in and out included);
      // these are the kernels alone (CUDA events), and the memory fields are device bytes.
      j["gpu"] = device_name(*c.executor);
      j["kernel_median_ms"] = st.device_median_ms;
      j["kernel_p10_ms"] = st.device_p10_ms;
      j["kernel_p90_ms"] = st.device_p90_ms;
      j["kernel_gflops"] = 2.0 * static_cast<double>(macs) / (st.device_median_ms * 1e6);
    }
    j["macs"] = macs;
    j["gflops"] = gflops;
    j["arena_bytes"] = bytes_json(mem.arena_bytes);
    j["weight_bytes"] = bytes_json(mem.weight_bytes);
    j["packed_weight_bytes"] = bytes_json(mem.packed_weight_bytes);
    j["workspace_bytes"] = bytes_json(mem.workspace_bytes);
    if (b.times) j["times_ms"] = st.times_ms;  // for drivers that pool repeats across rounds
    std::cout << j.dump(2) << "\n";
    return;
  }
  std::printf("%s\n", v.str().c_str());
  std::printf(
      "median %.3f ms  (mean %.3f  min %.3f  max %.3f  p10 %.3f  p90 %.3f  std %.3f  CV "
      "%.1f%%)\n",
      st.median_ms, st.mean_ms, st.min_ms, st.max_ms, st.p10_ms, st.p90_ms, st.std_ms, st.cv * 100);
  std::printf("first run %.3f ms, compile %.1f ms, %d repeats x %d runs, %.1f GFLOP/s\n",
              st.first_ms, c.compile_ms, b.repeat, st.number, gflops);
  if (st.device_median_ms >= 0)
    std::printf(
        "on %s: kernels %.3f ms median (p10 %.3f, p90 %.3f; copies excluded), %.1f GFLOP/s\n",
        device_name(*c.executor).c_str(), st.device_median_ms, st.device_p10_ms, st.device_p90_ms,
        2.0 * static_cast<double>(macs) / (st.device_median_ms * 1e6));
  if (mem.arena_bytes != kUnknownBytes)
    std::printf(
        "%smemory: activations %.2f MiB (unplanned %.2f), weights %.2f MiB (packed %.2f), "
        "workspace %.2f MiB\n",
        st.device_median_ms >= 0 ? "device " : "", mem.arena_bytes / 1048576.0,
        mem.unplanned_bytes / 1048576.0, mem.weight_bytes / 1048576.0,
        mem.packed_weight_bytes / 1048576.0, mem.workspace_bytes / 1048576.0);
}

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
                  "dlas (the compiled engine), onednn (each layer a oneDNN primitive), "
                  "cudnn (cuDNN's convolutions on a CUDA device), reference (the reference "
                  "interpreter) or an installed ONNX peer; --conv-algo/--layers/--isa/"
                  "--opt-level apply to dlas only")
      ->default_val("dlas")
      ->check(CLI::IsMember(executor_backends()));
  cmd->add_flag("--json", b->json, "print one JSON object");
  cmd->add_flag("--times", b->times, "with --json: add every repeat's time as \"times_ms\"");
  cmd->callback([&run, model, engine, b] {
    run = [model, engine, b] {
      compress_name(engine->compress);  // a bad spec fails before the model loads
      Graph g = load_model_from_args(*model);
      apply_compress(g, engine->compress, nullptr, engine->threads);
      // The measured thing: the compiled plan, or another backend on the same graph.
      const CompiledModel c = compile_from_args(g, *model, *engine, b->backend);
      LatencyOptions lo;
      lo.warmup = b->warmup;
      lo.repeat = b->repeat;
      lo.number = b->number;
      lo.min_repeat_ms = b->min_repeat_ms;
      const bool tty = isatty(fileno(stderr)) && !b->json;
      auto last_report = std::chrono::steady_clock::now();
      if (tty)
        lo.progress = [&](int done, int total) {
          if (ms_since(last_report) <= 250) return;
          last_report = std::chrono::steady_clock::now();
          std::fprintf(stderr, "\rbench: %d/%d repeats", done, total);
        };
      const LatencyStats st = measure_latency(*c.executor, random_inputs(g, b->input_seed), lo);
      if (tty) std::fprintf(stderr, "\r%40s\r", "");
      print_bench(c, *b, st);
      return 0;
    };
  });
}

}  // namespace dlas::cli

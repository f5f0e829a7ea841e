// dlas profile: per-step time of the compiled plan, with each step's MACs,
// achieved GFLOP/s and share of the total, and the whole model timed without the per-step
// clocks (measure_latency, as `dlas bench` times it).
#include <algorithm>
#include <cstdio>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>

#include "cli.h"
#include "dlas/core/error.h"
#include "dlas/hw/gpu.h"
#include "dlas/hw/peak.h"
#include "dlas/system/conv_shapes.h"
#include "dlas/system/cuda_executor.h"
#include "dlas/system/measure.h"

namespace dlas::cli {
namespace {

std::string dims_text(const Shape& s) {
  std::string t;
  for (int64_t d : s) t += (t.empty() ? "" : "x") + std::to_string(d);
  return t.empty() ? "scalar" : t;
}

// What a CPU step computes: a conv's problem key (ConvProblem::key(), the geometry the
// tuner and the shape lists use), else the shape of the value it writes (a reorder's
// node is "<value>@<layout>").
std::string step_shape(const Graph& g, const std::map<std::string, const Node*>& by_name,
                       const StepInfo& s) {
  if (s.op == "Reorder") {
    const std::string value = s.node.substr(0, s.node.rfind('@'));
    return g.has_value(value) ? dims_text(g.value(value).shape) : "";
  }
  auto it = by_name.find(s.node);
  if (it == by_name.end()) return "";
  const Node& n = *it->second;
  try {
    if (auto c = conv_node_of(g, n)) return c->problem.key();
  } catch (const Error&) {
    // not a conv the engine lowers: fall through to the output shape
  }
  return !n.outputs.empty() && g.has_value(n.outputs[0]) ? dims_text(g.value(n.outputs[0]).shape)
                                                         : "";
}

// The CUDA plan's profile: each step's device time (CUDA events around it, steps launched
// one by one), against the GPU's measured fp32 peak; the whole model as bench times it.
int profile_cuda(CudaExecutor& plan, const Variant& variant, int repeat, bool json, int top) {
  const std::vector<Tensor> in = random_inputs(plan.graph(), 0);
  std::vector<Tensor> out = plan.make_outputs();
  plan.run_into(in, out);  // the inputs the profiled steps read
  const std::vector<double> ms = plan.profile_steps(repeat);
  LatencyOptions lo;
  lo.warmup = 1;
  lo.repeat = repeat;
  const LatencyStats whole = measure_latency(plan, in, lo);
  const GpuPeak pk = measure_gpu_peak(parse_device(variant.device));
  const double peak_gflops = pk.fp32_tflops * 1e3;
  const auto& steps = plan.steps();
  double total = 0;
  for (double v : ms) total += v;
  nlohmann::ordered_json j;
  j["variant"] = variant.str();
  j["device"] = plan.device_label();
  j["cuda_graph"] = plan.graph_captured();
  j["peak_gflops"] = peak_gflops;
  j["total_ms"] = total;
  j["median_ms"] = whole.median_ms;
  j["kernel_median_ms"] = whole.device_median_ms;
  j["steps"] = nlohmann::json::array();
  for (size_t i = 0; i < steps.size(); ++i) {
    const CudaStepInfo& s = steps[i];
    nlohmann::ordered_json e;
    e["node"] = s.node;
    e["op"] = s.op;
    e["kernel"] = s.algo;
    e["shape"] = s.shape;
    e["knobs"] = knobs_to_string(s.knobs);
    e["macs"] = s.macs;
    e["ms"] = ms[i];
    e["gflops"] = ms[i] > 0 ? 2.0 * static_cast<double>(s.macs) / (ms[i] * 1e6) : 0.0;
    e["peak_pct"] = peak_gflops > 0 ? 100.0 * e["gflops"].get<double>() / peak_gflops : 0.0;
    e["share"] = total > 0 ? ms[i] / total : 0.0;
    j["steps"].push_back(e);
  }
  if (json) {
    std::cout << j.dump(2) << "\n";
    return 0;
  }
  std::vector<size_t> order(steps.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  if (top > 0) {
    std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return ms[a] > ms[b]; });
    order.resize(std::min<size_t>(order.size(), static_cast<size_t>(top)));
  }
  std::printf("%s\n", variant.str().c_str());
  std::printf("%-36s %-18s %-24s %12s %9s %8s %6s %6s  %s\n", "node", "op", "kernel", "MACs", "ms",
              "GFLOP/s", "%peak", "share", "knobs");
  for (size_t i : order) {
    const auto& e = j["steps"][i];
    std::printf("%-36.36s %-18.18s %-24.24s %12s %9.4f %8.1f %5.1f%% %5.1f%%  %s\n",
                steps[i].node.c_str(), steps[i].op.c_str(), steps[i].algo.c_str(),
                with_commas(steps[i].macs).c_str(), ms[i], e["gflops"].get<double>(),
                e["peak_pct"].get<double>(), e["share"].get<double>() * 100,
                e["knobs"].get<std::string>().c_str());
  }
  std::printf(
      "total %.3f ms over %zu steps launched one by one, %.1f GFLOP/s (measured fp32 peak "
      "%.1f GFLOP/s on %s)\n",
      total, steps.size(), 2.0 * static_cast<double>(plan.graph().macs()) / (total * 1e6),
      peak_gflops, plan.device_label().c_str());
  std::printf("whole model: median %.3f ms end to end, kernels %.3f ms (%s) over %d runs\n",
              whole.median_ms, whole.device_median_ms,
              plan.graph_captured() ? "one CUDA graph" : "launched one by one", repeat);
  return 0;
}

}  // namespace

void add_profile_command(CLI::App& app, Action& run) {
  auto* cmd =
      app.add_subcommand("profile", "Per-layer time, MACs and GFLOP/s of the compiled engine");
  auto model = std::make_shared<ModelArgs>();
  auto engine = std::make_shared<EngineArgs>();
  auto repeat = std::make_shared<int>(20);
  auto json = std::make_shared<bool>(false);
  auto top = std::make_shared<int>(0);
  auto backend = std::make_shared<std::string>("dlas");
  add_model_args(*cmd, *model);
  add_engine_args(*cmd, *engine);
  cmd->add_option("--repeat", *repeat,
                  "profiled runs averaged (after one warm-up), then as many whole-model runs")
      ->default_val(20)
      ->check(CLI::Range(1, 100000));
  cmd->add_option("--top", *top, "print only the N slowest steps (0: all, in graph order)")
      ->default_val(0);
  cmd->add_option("--backend", *backend,
                  "dlas (the compiled engine, on the CPU or --device cuda) or cudnn (cuDNN's "
                  "convolutions on a CUDA device)")
      ->default_val("dlas")
      ->check(CLI::IsMember({"dlas", "cudnn"}));
  cmd->add_flag("--json", *json, "print one JSON object");
  cmd->callback([&run, model, engine, repeat, json, top, backend] {
    run = [model, engine, repeat, json, top, backend] {
      compress_name(engine->compress);  // a bad spec fails before the model loads
      Graph g = load_model_from_args(*model);
      apply_compress(g, engine->compress, nullptr, engine->threads);
      const CompiledModel c = compile_from_args(g, *model, *engine, *backend);
      const Variant& variant = c.variant;
      if (auto* cuda = dynamic_cast<CudaExecutor*>(c.executor.get()))
        return profile_cuda(*cuda, variant, *repeat, *json, *top);
      Plan& plan = dynamic_cast<Plan&>(*c.executor);  // per-step times are the plan's own
      const std::vector<Tensor> in = random_inputs(plan.graph(), 0);
      std::vector<Tensor> out = plan.make_outputs();
      std::vector<double> sec;
      plan.run_profiled(in, out, sec);  // warm-up
      std::fill(sec.begin(), sec.end(), 0.0);
      for (int r = 0; r < *repeat; ++r) plan.run_profiled(in, out, sec);
      // The whole model, timed as `dlas bench` times it (no per-step clocks in the way).
      LatencyOptions lo;
      lo.warmup = 0;  // the profiled runs warmed it up
      lo.repeat = *repeat;
      const LatencyStats whole = measure_latency(plan, in, lo);
      const auto& steps = plan.steps();
      double total = 0;
      for (double& s : sec) total += (s /= *repeat);
      // % of the measured peak of this ISA path at this thread count (dlas hw --peak): each
      // step against the unit its arithmetic runs on (AMX tiles, VNNI, ...), the summary
      // against the path's f32 FMAs.
      const double peak_gflops = peak().gflops(plan.isa(), plan.threads());
      nlohmann::ordered_json j;
      j["variant"] = variant.str();
      j["peak_gflops"] = peak_gflops;
      j["total_ms"] = total * 1e3;
      j["median_ms"] = whole.median_ms;
      j["reference_steps"] = reference_steps(plan).size();
      j["steps"] = nlohmann::json::array();
      std::map<std::string, const Node*> by_name;
      for (const Node& n : plan.graph().nodes) by_name[n.name] = &n;
      for (size_t i = 0; i < steps.size(); ++i) {
        const StepInfo& s = steps[i];
        nlohmann::ordered_json e;
        e["node"] = s.node;
        e["op"] = s.op;
        e["kernel"] = s.kernel;
        e["shape"] = step_shape(plan.graph(), by_name, s);
        e["reference"] = s.kernel == "reference";
        e["layout"] = layout_name(s.layout);
        e["knobs"] = s.knobs;
        e["compute"] = s.compute;
        e["macs"] = s.macs;
        e["ms"] = sec[i] * 1e3;
        e["gflops"] = sec[i] > 0 ? 2.0 * static_cast<double>(s.macs) / sec[i] / 1e9 : 0.0;
        e["share"] = total > 0 ? sec[i] / total : 0.0;
        const double step_peak = peak().gops_for(s.compute, plan.isa(), plan.threads());
        e["peak_gflops"] = step_peak;
        e["peak_pct"] = step_peak > 0 ? 100.0 * e["gflops"].get<double>() / step_peak : 0.0;
        j["steps"].push_back(e);
      }
      if (*json) {
        std::cout << j.dump(2) << "\n";
        return 0;
      }
      std::vector<size_t> order(steps.size());
      for (size_t i = 0; i < order.size(); ++i) order[i] = i;
      if (*top > 0) {
        std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return sec[a] > sec[b]; });
        order.resize(std::min<size_t>(order.size(), static_cast<size_t>(*top)));
      }
      std::printf("%s\n", variant.str().c_str());
      std::printf("%-36s %-18s %-24s %-7s %12s %9s %8s %6s %6s  %s\n", "node", "op", "kernel",
                  "layout", "MACs", "ms", "GFLOP/s", "%peak", "share", "knobs");
      for (size_t i : order) {
        const auto& e = j["steps"][i];
        const std::string kernel = steps[i].kernel == "reference" ? "! reference" : steps[i].kernel;
        std::printf("%-36.36s %-18.18s %-24.24s %-7s %12s %9.3f %8.1f %5.1f%% %5.1f%%  %s\n",
                    steps[i].node.c_str(), steps[i].op.c_str(), kernel.c_str(),
                    layout_name(steps[i].layout), with_commas(steps[i].macs).c_str(),
                    e["ms"].get<double>(), e["gflops"].get<double>(), e["peak_pct"].get<double>(),
                    e["share"].get<double>() * 100, steps[i].knobs.c_str());
      }
      const size_t reorders = static_cast<size_t>(std::count_if(
          steps.begin(), steps.end(), [](const StepInfo& s) { return s.op == "Reorder"; }));
      std::printf(
          "total %.3f ms over %zu steps (%zu layout reorders), %.1f GFLOP/s (measured peak %.1f "
          "GFLOP/s on %s x%d)\n",
          total * 1e3, steps.size(), reorders,
          2.0 * static_cast<double>(plan.graph().macs()) / total / 1e9, peak_gflops,
          isa_name(plan.isa()), plan.threads());
      const std::string slow = reference_steps_line(reference_steps(plan));
      if (!slow.empty()) std::printf("%s (marked !)\n", slow.c_str());
      std::printf("whole model: median %.3f ms over %d runs (min %.3f, max %.3f)\n",
                  whole.median_ms, *repeat, whole.min_ms, whole.max_ms);
      return 0;
    };
  });
}

}  // namespace dlas::cli

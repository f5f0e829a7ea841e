// `dlas hw`: the CPU and CUDA GPUs of this machine, their measured peaks (--peak), and the
// machine profile (--calibrate).
#include <cstdio>
#include <iomanip>
#include <iostream>
#include <nlohmann/json.hpp>

#include "cli.h"
#include "dlas/core/error.h"
#include "dlas/core/progress.h"
#include "dlas/hw/cpu.h"
#include "dlas/hw/gpu.h"
#include "dlas/hw/isa.h"
#include "dlas/hw/peak.h"
#include "dlas/hw/thread_pool.h"
#include "dlas/system/calibrate.h"
#include "dlas/system/cuda_profile.h"
#include "dlas/system/cuda_tune.h"

namespace dlas::cli {
namespace {

// `dlas hw --calibrate`: measures the machine profile and writes it.
int run_calibrate(int threads_arg, double search_seconds, const std::string& out_arg, bool json) {
  CalibrateOptions o;
  o.isa = active_isa();
  o.threads = ThreadPool::shared(threads_arg)->threads();
  o.search_seconds = search_seconds;
  const std::string out = out_arg.empty() ? default_profile_path(o.isa, o.threads) : out_arg;
  DLAS_CHECK(!out.empty(), ErrorKind::kUsage,
             "--calibrate: no cache folder (set XDG_CACHE_HOME or HOME, or pass --profile FILE)");
  Progress bar({.tty = progress_tty(json), .label = "calibrate", .line_seconds = 5});
  o.progress = [&](int done, int total, const std::string& cls) {
    bar.update(done, total, bar.counts(done, total, "shapes") + ", " + cls, done == total);
  };
  o.search_progress = [&](double seconds, double budget, int64_t trials, int round) {
    bar.update(static_cast<int64_t>(seconds * 1000), static_cast<int64_t>(budget * 1000),
               str("search: round ", round, ", ", trials, " candidates, ",
                   static_cast<int>(seconds), " of at most ", static_cast<int>(budget), " s"));
  };
  const CalibrateResult r = calibrate(o);
  bar.finish(/*keep=*/!bar.tty());
  r.profile.save(out);
  if (json) {
    nlohmann::ordered_json j;
    j["profile"] = out;
    j["cpu"] = r.profile.cpu;
    j["isa"] = isa_name(r.profile.isa);
    j["threads"] = r.profile.threads;
    j["seconds"] = r.seconds;
    j["search"] = {
        {"trials", r.search_trials}, {"seconds", r.search_seconds}, {"stop", r.search_stop}};
    j["skipped_shapes"] = r.skipped_shapes;
    j["rows"] = nlohmann::json::array();
    for (const CalibrateRow& row : r.rows) {
      nlohmann::ordered_json e;
      e["class"] = row.shape_class;
      e["shape"] = row.shape;
      e["candidates"] = row.candidates;
      e["algo"] = row.best.algo;
      e["layout"] = layout_name(row.best.layout);
      e["knobs"] = knobs_to_string(row.best.knobs);
      e["us"] = row.best.us;
      e["rule_algo"] = row.rule_algo;
      e["rule_us"] = row.rule_us > 0 ? nlohmann::json(row.rule_us) : nlohmann::json();
      e["seconds"] = row.seconds;
      e["searched"] = row.searched;
      j["rows"].push_back(e);
    }
    std::cout << j.dump(2) << "\n";
    return 0;
  }
  std::printf("calibrated %s, %s, %d thread%s in %.1f s (times: median of repeats, us)\n",
              r.profile.cpu.c_str(), isa_name(r.profile.isa), r.profile.threads,
              r.profile.threads == 1 ? "" : "s", r.seconds);
  if (o.search_seconds > 0)
    std::printf("search: %lld candidates in %.1f s (stopped: %s)\n",
                static_cast<long long>(r.search_trials), r.search_seconds,
                r.search_stop.empty() ? "-" : r.search_stop.c_str());
  if (r.skipped_shapes > 0)
    std::printf(
        "budget spent in the survey: %d shapes left unmeasured (their classes take the "
        "nearest entry or the built-in rule)\n",
        r.skipped_shapes);
  std::printf("%-32s %-13s %-8s %10s %-13s %10s  %s\n", "class", "best", "layout", "us",
              "rule (nchw)", "us", "knobs");
  for (const CalibrateRow& row : r.rows) {
    const std::string rule_us = row.rule_us > 0 ? str(static_cast<int64_t>(row.rule_us)) : "-";
    std::printf("%-32s %-13s %-8s %10.1f %-13s %10s  %s\n", row.shape_class.c_str(),
                row.best.algo.c_str(), layout_name(row.best.layout), row.best.us,
                row.rule_algo.c_str(), rule_us.c_str(), knobs_to_string(row.best.knobs).c_str());
  }
  std::printf("profile written to %s\n", out.c_str());
  return 0;
}

// `dlas hw --calibrate --device cuda`: measures the GPU's profile and writes it.
int run_calibrate_cuda(const std::string& device_arg, const std::string& out_arg, bool json) {
  int device = 0;
  try {
    device = parse_device(canonical_device(device_arg));
  } catch (const Error& e) {
    if (e.kind() == ErrorKind::kInvalidInput) fail(ErrorKind::kUsage, "--device: ", e.what());
    throw;
  }
  DLAS_CHECK(device >= 0, ErrorKind::kInternal, "run_calibrate_cuda on the CPU");
  const std::string gpu = tune::cuda_hardware_id(device);
  const std::string out = out_arg.empty() ? default_cuda_profile_path(gpu) : out_arg;
  DLAS_CHECK(!out.empty(), ErrorKind::kUsage,
             "--calibrate: no cache folder (set XDG_CACHE_HOME or HOME, or pass --profile FILE)");
  Progress bar({.tty = progress_tty(json), .label = "calibrate", .line_seconds = 5});
  const CudaCalibrateResult r =
      calibrate_cuda(device, 4, [&](int done, int total, const std::string& cls) {
        bar.update(done, total, bar.counts(done, total, "classes") + ", " + cls, done == total);
      });
  bar.finish(/*keep=*/!bar.tty());
  r.profile.save(out);
  if (json) {
    nlohmann::ordered_json j;
    j["profile"] = out;
    j["gpu"] = r.profile.gpu;
    j["seconds"] = r.seconds;
    j["rows"] = nlohmann::json::array();
    for (const CudaCalibrateRow& row : r.rows) {
      nlohmann::ordered_json e;
      e["class"] = row.shape_class;
      e["shape"] = row.shape;
      e["candidates"] = row.candidates;
      e["algo"] = row.best.algo;
      e["knobs"] = knobs_to_string(row.best.knobs);
      e["us"] = row.best.us;
      e["rule_algo"] = row.best.rule;
      e["rule_us"] = row.best.rule_us > 0 ? nlohmann::json(row.best.rule_us) : nlohmann::json();
      j["rows"].push_back(e);
    }
    std::cout << j.dump(2) << "\n";
    return 0;
  }
  std::printf("calibrated %s in %.1f s (times: median of repeats, us)\n", r.profile.gpu.c_str(),
              r.seconds);
  std::printf("%-28s %-10s %9s %-10s %9s  %s\n", "class", "best", "us", "rule", "us", "knobs");
  for (const CudaCalibrateRow& row : r.rows)
    std::printf("%-28s %-10s %9.1f %-10s %9.1f  %s\n", row.shape_class.c_str(),
                row.best.algo.c_str(), row.best.us, row.best.rule.c_str(), row.best.rule_us,
                knobs_to_string(row.best.knobs).c_str());
  std::printf("profile written to %s\n", out.c_str());
  return 0;
}

// "79.6 GiB".
std::string gib(int64_t bytes) {
  return str(std::fixed, std::setprecision(1), bytes / 1073741824.0, " GiB");
}

nlohmann::json gpus_json(const std::vector<GpuInfo>& gpus, const std::vector<GpuPeak>& peaks) {
  nlohmann::json a = nlohmann::json::array();
  for (size_t i = 0; i < gpus.size(); ++i) {
    const GpuInfo& g = gpus[i];
    nlohmann::json e = {{"index", g.index},
                        {"name", g.name},
                        {"sm_count", g.sm_count},
                        {"compute_capability", str(g.cc_major, ".", g.cc_minor)},
                        {"memory_bytes", g.memory_bytes},
                        {"l2_bytes", g.l2_bytes},
                        {"driver", g.driver},
                        {"runtime", g.runtime}};
    if (i < peaks.size()) {
      const GpuPeak& p = peaks[i];
      e["peak_fp32_tflops"] = p.fp32_tflops;
      e["peak_fp16_tflops"] = p.fp16_tflops;
      e["peak_tensor_fp16_tflops"] = p.tensor_fp16_tflops;
      e["copy_gbs"] = p.copy_gbs;
      e["peak_seconds"] = p.seconds;
    }
    a.push_back(e);
  }
  return a;
}

void print_gpus(const std::vector<GpuInfo>& gpus) {
  if (gpus.empty()) {
    std::printf("GPUs: none (%s)\n", gpu_unavailable_reason().c_str());
    return;
  }
  std::printf("GPUs (CUDA driver %s, runtime %s)\n", gpus[0].driver.c_str(),
              gpus[0].runtime.c_str());
  for (const GpuInfo& g : gpus)
    std::printf("  cuda:%-3d %s, %d SMs, %s, compute capability %d.%d, L2 %lld MiB\n", g.index,
                g.name.c_str(), g.sm_count, gib(g.memory_bytes).c_str(), g.cc_major, g.cc_minor,
                static_cast<long long>(g.l2_bytes >> 20));
}

void print_gpu_peaks(const std::vector<GpuPeak>& peaks) {
  if (peaks.empty()) return;
  std::printf("GPU peaks (best of short runs; tensor: fp16 cuBLAS GEMM, fp32 accumulate)\n");
  std::printf("  %-8s %12s %12s %14s %12s\n", "device", "fp32 TFLOP/s", "fp16 TFLOP/s",
              "tensor TFLOP/s", "copy GB/s");
  for (const GpuPeak& p : peaks)
    std::printf("  cuda:%-3d %12.1f %12.1f %14.1f %12.1f\n", p.index, p.fp32_tflops, p.fp16_tflops,
                p.tensor_fp16_tflops, p.copy_gbs);
}

}  // namespace

void add_hw_command(CLI::App& app, Action& run) {
  auto* cmd = app.add_subcommand(
      "hw",
      "Show the detected CPU (model, cores, caches, ISA features) and CUDA GPUs (name, SMs, "
      "memory, compute capability); --peak measures peaks; --calibrate measures the machine "
      "profile");
  auto json = std::make_shared<bool>(false);
  auto with_peak = std::make_shared<bool>(false);
  cmd->add_flag("--json", *json, "print one JSON object");
  auto calib = std::make_shared<bool>(false);
  auto threads = std::make_shared<int>(1);
  auto profile = std::make_shared<std::string>();
  auto device = std::make_shared<std::string>("cpu");
  auto search = std::make_shared<double>(CalibrateOptions{}.search_seconds);
  cmd->add_option("--device", *device,
                  "--calibrate: cpu (the CPU's machine profile) or cuda[:N] (the GPU's: the best "
                  "CUDA conv algorithm per shape class, docs/gpu.md)")
      ->default_val("cpu");
  cmd->add_flag("--calibrate", *calib,
                "measure the conv algorithms per shape class (about a minute on 2 cores) and "
                "write the machine profile the auto rule then follows (docs/engine.md "
                "\"Machine profile\")");
  cmd->add_option("--threads", *threads, "--calibrate: worker threads (0: one per logical CPU)")
      ->default_val(1)
      ->check(CLI::Range(0, 1024));
  cmd->add_option("--search-seconds", *search,
                  "--calibrate: after the survey of every algorithm, search the leading "
                  "candidates' knobs for at most this long (0: the survey only)")
      ->default_val(CalibrateOptions{}.search_seconds)
      ->check(CLI::Range(0.0, 3600.0));
  cmd->add_option("--profile", *profile,
                  "--calibrate: write the profile here (default: the calibration cache, "
                  "$XDG_CACHE_HOME/dlas or ~/.cache/dlas)");
  cmd->add_flag("--peak", *with_peak,
                "also measure peak fp32 GFLOP/s per ISA path, the peak G op/s of the "
                "low-precision units (VNNI, AVX512-BF16/FP16, AMX; 1 and all threads) and memory "
                "bandwidth (about 2-3 s), and per GPU the fp32, fp16 and tensor-core (fp16 GEMM) "
                "TFLOP/s and copy bandwidth (about 1-2 s each)");
  cmd->callback([&run, json, with_peak, calib, threads, profile, device, search] {
    run = [json, with_peak, calib, threads, profile, device, search] {
      DLAS_CHECK(*calib || (profile->empty() && *threads == 1 && *device == "cpu" &&
                            *search == CalibrateOptions{}.search_seconds),
                 ErrorKind::kUsage,
                 "--threads, --profile, --device and --search-seconds go with --calibrate");
      DLAS_CHECK(*device == "cpu" || *search == CalibrateOptions{}.search_seconds,
                 ErrorKind::kUsage, "--search-seconds goes with the CPU's --calibrate");
      if (*calib && *device != "cpu") return run_calibrate_cuda(*device, *profile, *json);
      DLAS_CHECK(!*calib || !*with_peak, ErrorKind::kUsage,
                 "--calibrate and --peak are separate runs");
      if (*calib) return run_calibrate(*threads, *search, *profile, *json);
      const CpuInfo& c = cpu_info();
      const PeakInfo* pk = *with_peak ? &peak() : nullptr;
      const std::vector<GpuInfo>& gpus = list_gpus();
      std::vector<GpuPeak> gpu_peaks;
      if (*with_peak)
        for (const GpuInfo& g : gpus) gpu_peaks.push_back(measure_gpu_peak(g.index));
      if (*json) {
        nlohmann::json j = {{"vendor", c.vendor},
                            {"model", c.model_name},
                            {"family", c.family},
                            {"cpu_model", c.model},
                            {"packages", c.packages},
                            {"cores", c.cores},
                            {"logical_processors", c.logical_processors},
                            {"l1d_bytes", c.l1d_bytes},
                            {"l2_bytes", c.l2_bytes},
                            {"l3_bytes", c.l3_bytes}};
        for (const auto& [name, on] : c.feature_list()) j["features"][name] = on;
        if (pk) {
          // Unsupported paths are null (the CPU lacks them), never a made-up 0.
          for (const IsaPeak& p : pk->isas) {
            nlohmann::json& e = j["peak_gflops"][isa_name(p.isa)];
            if (p.supported)
              e = {{"1", p.gflops_single}, {"all", p.gflops_all}};
            else
              e = nullptr;
          }
          for (const UnitPeak& u : pk->units) {
            nlohmann::json& e = j["peak_unit_gops"][u.name];
            if (u.supported)
              e = {{"1", u.gops_single}, {"all", u.gops_all}};
            else
              e = nullptr;
          }
          j["peak_threads"] = pk->threads;
          j["bandwidth_gbs"] = {
              {"read", pk->read_gbs}, {"copy", pk->copy_gbs}, {"triad", pk->triad_gbs}};
          j["bandwidth_buffer_bytes"] = pk->bandwidth_buffer_bytes;
          j["handoff_ns"] = pk->handoff_ns;
          j["peak_seconds"] = pk->seconds;
        }
        j["gpus"] = gpus_json(gpus, gpu_peaks);
        if (gpus.empty()) j["gpu_unavailable_reason"] = gpu_unavailable_reason();
        std::cout << j.dump(2) << "\n";
        return 0;
      }
      const std::string sig = c.signature();
      std::printf("cpu      %s (%s%s%s)\n", c.model_name.c_str(), c.vendor.c_str(),
                  sig.empty() ? "" : ", ", sig.c_str());
      std::printf("cores    %u (%u logical, %u package%s)\n", c.cores, c.logical_processors,
                  c.packages, c.packages == 1 ? "" : "s");
      std::printf("caches   L1d %llu KiB, L2 %llu KiB, L3 %llu KiB\n",
                  static_cast<unsigned long long>(c.l1d_bytes >> 10),
                  static_cast<unsigned long long>(c.l2_bytes >> 10),
                  static_cast<unsigned long long>(c.l3_bytes >> 10));
      std::printf("features");
      for (const auto& [name, on] : c.feature_list())
        if (on) std::printf(" %s", name.c_str());
      std::printf("\n");
      print_gpus(gpus);
      if (pk) {
        std::printf("peak fp32 GFLOP/s (best of short runs)\n");
        std::printf("  %-12s %12s %12s\n", "isa", "1 thread", str(pk->threads, " threads").c_str());
        for (const IsaPeak& p : pk->isas) {
          if (p.supported)
            std::printf("  %-12s %12.1f %12.1f\n", isa_name(p.isa), p.gflops_single, p.gflops_all);
          else
            std::printf("  %-12s %12s %12s\n", isa_name(p.isa), "n/a", "n/a");
        }
        std::printf("peak low-precision G op/s (2 per product)\n");
        std::printf("  %-12s %12s %12s\n", "unit", "1 thread",
                    str(pk->threads, " threads").c_str());
        for (const UnitPeak& u : pk->units) {
          if (u.supported)
            std::printf("  %-12s %12.1f %12.1f\n", u.name, u.gops_single, u.gops_all);
          else
            std::printf("  %-12s %12s %12s\n", u.name, "n/a", "n/a");
        }
        std::printf("memory bandwidth GB/s (%d threads, %zu MiB buffers)\n", pk->threads,
                    pk->bandwidth_buffer_bytes >> 20);
        std::printf("  read %.1f  copy %.1f  triad %.1f\n", pk->read_gbs, pk->copy_gbs,
                    pk->triad_gbs);
        if (pk->handoff_ns > 0)
          std::printf("thread handoff: cache-line round trip %.0f ns between two threads\n",
                      pk->handoff_ns);
        print_gpu_peaks(gpu_peaks);
      }
      return 0;
    };
  });
}

}  // namespace dlas::cli

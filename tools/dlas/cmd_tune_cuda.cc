// `dlas tune --device cuda`: the GPU tuner (dlas/system/cuda_tune.h) with the command's
// budget, patience, seed and outputs; the report as three lines or one JSON object.
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>

#include "cmd_tune.h"
#include "dlas/core/error.h"
#include "dlas/core/file.h"
#include "dlas/hw/gpu.h"
#include "dlas/system/cuda_tune.h"
#include "dlas/system/tune_model.h"

namespace dlas::cli {

int run_cuda_tune(const ModelArgs& model, const EngineArgs& engine, const TuneArgs& a) {
  tune::CudaTuneOptions o;
  try {
    o.device = parse_device(canonical_device(engine.device));
  } catch (const Error& e) {
    if (e.kind() == ErrorKind::kInvalidInput) fail(ErrorKind::kUsage, "--device: ", e.what());
    throw;
  }
  tune::Budget budget;
  try {
    budget = tune::parse_budget(a.budget);
  } catch (const Error& e) {
    fail(ErrorKind::kUsage, "--", e.what());
  }
  o.budget_seconds = budget.seconds;
  o.budget_trials = budget.trials;
  o.patience = a.patience;
  o.repeat = a.repeat;
  o.seed = a.tune_seed;
  o.opt_level = engine.opt_level;
  DLAS_CHECK(engine.compress.find("int8") == std::string::npos, ErrorKind::kUnsupported,
             "--compress ", engine.compress,
             ": int8 variants run on the CPU only (the GPU runs f32, fp16 and bf16 models)");
  Graph g = load_model_from_args(model);
  apply_compress(g, engine.compress, nullptr, engine.threads);
  const std::string hardware = tune::cuda_hardware_id(o.device);
  std::fprintf(stderr, "tune: %s on cuda:%d (%s), budget %s, patience %d\n", model.model.c_str(),
               o.device, hardware.c_str(), a.budget.c_str(), o.patience);
  const std::string log = a.out + ".partial";
  std::filesystem::remove(log);
  std::ofstream(log).flush();
  o.on_record = [&](const tune::Record& r) { tune::append_record(log, r); };
  o.on_layer = [](int done, int total, double seconds) {
    std::fprintf(stderr, "\rtune: layer %d/%d  %.1f s", done, total, seconds);
    if (done == total) std::fprintf(stderr, "\n");
  };
  const tune::CudaTuneReport r = tune::tune_cuda(g, o);
  commit_temp_file(log, a.out);
  if (!a.choices.empty()) write_layer_choices(a.choices, r.choices);
  nlohmann::ordered_json j;
  j["model"] = model.model;
  j["device"] = "cuda:" + std::to_string(o.device);
  j["hardware"] = hardware;
  j["layers"] = r.layers;
  j["convs"] = r.convs;
  j["trials"] = r.trials;
  j["failures"] = r.failures;
  j["cold_algorithms"] = r.cold_algorithms;
  j["tuning_seconds"] = r.seconds;
  j["seconds_to_95"] = r.seconds_to_95;
  j["untuned_ms"] = r.untuned_ms;
  j["tuned_ms"] = r.tuned_ms;
  j["speedup"] = r.tuned_ms > 0 ? r.untuned_ms / r.tuned_ms : 0;
  j["winners"] = r.winners;
  j["records"] = a.out;
  if (!a.choices.empty()) j["choices"] = a.choices;
  j["curve"] = nlohmann::json::array();
  for (const auto& [sec, ms] : r.curve) j["curve"].push_back({{"seconds", sec}, {"layers_ms", ms}});
  if (a.json) {
    std::cout << j.dump(2) << "\n";
    return 0;
  }
  std::printf(
      "tuned %s on %s: %d conv layers (%d convs), %lld trials (%lld failed, %lld "
      "algorithms left cold) in %.1f s; within 5%% of the final after %.1f s\n",
      model.model.c_str(), hardware.c_str(), r.layers, r.convs, static_cast<long long>(r.trials),
      static_cast<long long>(r.failures), static_cast<long long>(r.cold_algorithms), r.seconds,
      r.seconds_to_95);
  std::string winners;
  for (const auto& [algo, n] : r.winners)
    winners += (winners.empty() ? "" : ", ") + algo + " " + std::to_string(n);
  std::printf("layers won: %s\n", winners.c_str());
  std::printf("model kernels: untuned %.3f ms, tuned %.3f ms (%.2fx); records in %s\n",
              r.untuned_ms, r.tuned_ms, r.tuned_ms > 0 ? r.untuned_ms / r.tuned_ms : 0.0,
              a.out.c_str());
  return 0;
}

}  // namespace dlas::cli

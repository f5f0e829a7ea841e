// `dlas tune`'s report: one JSON object (--json) or three lines on stdout.
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>

#include "cmd_tune.h"

namespace dlas::cli {

namespace {

nlohmann::ordered_json report_json(const std::string& model, const TuneArgs& a, const TuneRun& t) {
  const tune::TuneReport& r = t.report;
  const tune::Task& first = t.tasks.at(0);
  nlohmann::ordered_json j;
  j["model"] = model;
  j["compress"] = t.compress;
  j["strategy"] = a.strategy;
  j["mode"] = a.mode;
  j["cost_model"] = r.cost_model;
  j["threads"] = first.threads;
  j["isa"] = isa_name(first.isa);
  j["hardware"] = tune::hardware_id(first.isa, first.threads);
  j["tasks"] = t.tasks.size();
  j["layers"] = t.layers;
  j["trials"] = r.trials;
  j["failures"] = r.failures;
  j["skipped_cold"] = r.skipped_cold;
  j["rounds"] = r.rounds;
  j["tuning_seconds"] = r.seconds;
  j["measure_seconds"] = r.measure_seconds;
  j["cold_seconds"] = r.cold_seconds;
  j["retime_seconds"] = r.retime_seconds;
  j["retime_failures"] = r.retime_failures;
  j["confirm_seconds"] = r.confirm_seconds;
  j["confirmed"] = r.confirmed;
  j["measure_cache"] = a.cache;
  j["reuse_bytes"] = t.reuse_bytes;
  j["cold_share"] = r.measure_seconds > 0 ? r.cold_seconds / r.measure_seconds : 0;
  j["ranking_accuracy"] = r.final_ranking_accuracy;
  j["untuned_ms"] = r.untuned_latency_s * 1e3;
  j["tuned_ms"] = r.tuned_latency_s * 1e3;
  j["speedup"] = r.tuned_latency_s > 0 ? r.untuned_latency_s / r.tuned_latency_s : 0;
  j["stop_reason"] = r.stop_reason;
  j["records"] = a.out;
  if (!a.choices.empty()) j["choices"] = a.choices;
  j["curve"] = nlohmann::json::array();
  for (const tune::CurvePoint& p : r.curve)
    j["curve"].push_back(
        {{"seconds", p.seconds}, {"trials", p.trials}, {"latency_ms", p.latency_s * 1e3}});
  return j;
}

}  // namespace

void print_tune_report(const std::string& model, const TuneArgs& a, const TuneRun& t) {
  const nlohmann::ordered_json j = report_json(model, a, t);
  if (a.json) {
    std::cout << j.dump(2) << "\n";
    return;
  }
  const tune::TuneReport& r = t.report;
  std::printf("tuned %s in %.1f s (%s): %lld trials, %lld failed, %lld skipped as cold\n",
              model.c_str(), r.seconds, r.stop_reason.c_str(), static_cast<long long>(r.trials),
              static_cast<long long>(r.failures), static_cast<long long>(r.skipped_cold));
  std::printf(
      "latency %.3f ms -> %.3f ms (%.2fx); %.0f%% of measuring time on cold or failed "
      "candidates; cost model ranking accuracy %.2f\n",
      r.untuned_latency_s * 1e3, r.tuned_latency_s * 1e3, j["speedup"].get<double>(),
      j["cold_share"].get<double>() * 100, r.final_ranking_accuracy);
  std::printf("records: %s (apply with --records)\n", a.out.c_str());
}

}  // namespace dlas::cli

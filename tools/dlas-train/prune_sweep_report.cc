// The report of `dlas prune-sweep`: sweep.json's object (--json) or a table on stdout.
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <nlohmann/json.hpp>

#include "cmd_train.h"

namespace dlas::cli {

namespace {

std::string pct(double f) {
  if (f < 0) return "-";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f%%", 100 * f);
  return buf;
}

void print_table(const SweepResult& r) {
  std::printf("%-10s %8s %8s %8s %8s %12s %12s %14s %7s %8s\n", "SPEC", "ACHIEVED", "PRUNED",
              "TOP-1", "TOP-5", "PARAMS", "NONZERO", "MACS", "EPOCHS", "SECONDS");
  auto row = [](const SweepPoint& p, bool elbow) {
    std::printf("%-10s %8.4f %8s %8s %8s %12s %12s %14s %7.3f %8.1f%s\n", p.spec.c_str(),
                p.achieved, pct(p.top1_pruned).c_str(), pct(p.top1).c_str(), pct(p.top5).c_str(),
                with_commas(p.params).c_str(), with_commas(p.nonzero_params).c_str(),
                with_commas(p.macs).c_str(), p.finetune_epochs, p.finetune_seconds,
                elbow ? "  <- elbow" : "");
  };
  row(r.baseline, false);
  for (size_t i = 0; i < r.points.size(); ++i) row(r.points[i], static_cast<int>(i) == r.elbow);
  auto quant = [](const char* what, const std::vector<SweepQuant>& q) {
    if (q.empty()) return;
    std::printf("%s:", what);
    for (const SweepQuant& x : q) std::printf("  %s %s", x.compress.c_str(), pct(x.top1).c_str());
    std::printf("\n");
  };
  quant("baseline", r.baseline_quant);
  quant("elbow", r.elbow_quant);
}

}  // namespace

void print_sweep(const SweepArgs& a, const PruneSweepRun& run, double seconds) {
  const SweepResult& r = run.result;
  if (a.json) {
    nlohmann::ordered_json j = nlohmann::ordered_json::parse(sweep_to_json(r));
    j["dir"] = a.output;
    j["stopped"] = run.stopped;
    j["seconds"] = seconds;
    std::cout << j.dump(2) << "\n";
    return;
  }
  print_table(r);
  std::printf("%s sweep of %s on %s: %zu levels, %.1f s; wrote %s\n", a.method.c_str(),
              a.model.c_str(), a.dataset.c_str(), r.points.size(), seconds,
              (std::filesystem::path(a.output) / "sweep.json").string().c_str());
}

}  // namespace dlas::cli

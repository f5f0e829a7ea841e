// The report's opening table: per model, the fastest deployment the study measured and what
// it gains over the model's dense fp32 baseline, with its accuracy.
#include <algorithm>
#include <map>
#include <set>
#include <tuple>

#include "study/analysis.h"

namespace dlas::study::analysis {

std::string short_model(const std::string& model) {
  std::string m = model;
  const size_t slash = m.find_last_of('/');
  if (slash != std::string::npos) m = m.substr(slash + 1);
  if (m.size() > 5 && m.compare(m.size() - 5, 5, ".onnx") == 0) m.resize(m.size() - 5);
  return m;
}

namespace {

bool ok(const Row& r) { return r.text("status") == kStatusOk && r.has("median_ms"); }
bool vendor(const Row& r) { return !r.text("backend").empty() && r.text("backend") != "dlas"; }
bool untuned(const Row& r) { return !is_tuned(r.text("schedule")); }
std::string compress_of(const Row& r) {
  return r.text("compress").empty() ? "dense" : r.text("compress");
}
std::string layout_of(const Row& r) { return r.text("layout").empty() ? "auto" : r.text("layout"); }
// The ISA path a row ran on (a vendor library picks the detected one).
std::string isa_of(const Row& r) { return vendor(r) ? r.text("detected_isa") : r.text("isa"); }

std::string points(double v) {
  std::string s = v >= 0 ? "+" : "";
  s += fmt(v, 2);
  return s;
}

// The summary's deployment: the fastest variant whose top-1 is at most this many points
// below the model's dense fp32 top-1, where the study measured accuracy.
constexpr double kSummaryMaxDrop = 1.0;

}  // namespace

Table summary_of(const std::vector<Row>& rows) {
  // cpu model dataset batch device
  using Key = std::tuple<std::string, std::string, std::string, int64_t, std::string>;
  std::map<Key, std::vector<const Row*>> groups;
  std::set<std::string> cpus, isas, devices;
  std::map<std::string, std::string> gpu_names;  // device -> the GPU's name
  bool any_dataset = false;
  for (const Row& r : rows) {
    if (!ok(r)) continue;
    const std::string device = device_of(r);
    groups[{r.text("cpu_model"), r.text("model"), r.text("dataset"), r.integer("batch"), device}]
        .push_back(&r);
    cpus.insert(r.text("cpu_model"));
    devices.insert(device);
    if (device != "cpu" && !r.text("gpu").empty()) gpu_names[device] = r.text("gpu");
    if (!vendor(r) && device == "cpu") isas.insert(r.text("isa"));
    any_dataset = any_dataset || !r.text("dataset").empty();
  }
  const bool several_cpus = cpus.size() > 1;
  // With a GPU beside the CPU: one row per model and device, the device named.
  const bool several_devices = devices.size() > 1;
  Table t{"summary",
          "Summary: the fastest deployment per model",
          "The fastest variant per model (and device, when the study measured a GPU beside the "
          "CPU) over everything measured (compression, algorithm or "
          "backend, threads, tuning, layout) -- where the study scored accuracy, the fastest "
          "whose top-1 is at most 1 point below the model's dense fp32 top-1 --, its median "
          "latency (ms) and its speedup over the baseline: the same model dense fp32 on dlas, "
          "untuned, at the same threads and ISA path, with the auto algorithm (else the "
          "fastest untuned dense dlas algorithm, named). top-1 in %, its change against the "
          "baseline in points; '*': a vendor library's row is not scored, so dlas's top-1 for "
          "the same compression is shown. fastest_any: the fastest variant regardless of "
          "accuracy, when it is another one.",
          {},
          {}};
  t.header = {"model"};
  if (any_dataset) t.header.push_back("dataset");
  if (several_cpus) t.header.push_back("cpu");
  if (several_devices) t.header.push_back("device");
  for (const char* h : {"deployment", "threads", "tuning", "median_ms", "baseline", "baseline_ms",
                        "speedup", "top1", "top1_change"})
    t.header.push_back(h);
  if (any_dataset) t.header.push_back("fastest_any");

  for (const auto& [key, group] : groups) {
    // A row's top-1: its own, else (a vendor library's row) dlas's for the same compression.
    auto scored_row = [&](const Row* r) -> const Row* {
      if (r->has("accuracy")) return r;
      for (const Row* o : group)
        if (o->has("accuracy") && compress_of(*o) == compress_of(*r)) return o;
      return nullptr;
    };
    // The model's dense fp32 top-1 (dlas, untuned; auto preferred).
    const Row* dense_scored = nullptr;
    for (const Row* r : group)
      if (!vendor(*r) && untuned(*r) && compress_of(*r) == "dense" && r->has("accuracy") &&
          (!dense_scored ||
           (r->text("conv_algo") == "auto" && dense_scored->text("conv_algo") != "auto")))
        dense_scored = r;
    auto within_budget = [&](const Row* r) {
      if (!dense_scored) return true;
      const Row* s = scored_row(r);
      return s && 100 * (dense_scored->real("accuracy") - s->real("accuracy")) <= kSummaryMaxDrop;
    };
    const Row* best = nullptr;
    const Row* any = nullptr;
    for (const Row* r : group) {
      if (!any || r->real("median_ms") < any->real("median_ms")) any = r;
      if (within_budget(r) && (!best || r->real("median_ms") < best->real("median_ms"))) best = r;
    }
    if (!best) best = any;
    // The baseline: dense fp32 dlas untuned at the same threads, auto preferred, then the
    // same ISA path, layout auto and opt level 3; then the lower median.
    const Row* base = nullptr;
    auto rank = [&](const Row* r) {
      return std::make_tuple(r->text("conv_algo") == "auto" ? 0 : 1,
                             r->text("isa") == isa_of(*best) ? 0 : 1,
                             layout_of(*r) == "auto" ? 0 : 1, r->integer("opt_level") == 3 ? 0 : 1,
                             r->real("median_ms"));
    };
    for (const Row* r : group)
      if (!vendor(*r) && untuned(*r) && compress_of(*r) == "dense" &&
          r->integer("threads") == best->integer("threads") && (!base || rank(r) < rank(base)))
        base = r;
    const Row* scored = scored_row(best);
    const Row* base_scored = base && base->has("accuracy") ? base : nullptr;
    for (const Row* r : group)
      if (!base_scored && r->has("accuracy") && compress_of(*r) == "dense") base_scored = r;

    auto deployment_of = [&](const Row& r) {
      std::string d = compress_of(r) + " + " + algorithm_of(r);
      if (!vendor(r) && device_of(r) == "cpu" &&
          (isas.size() > 1 || r.integer("isa_emulated") != 0))
        d += " / " + isa_of(r) + (r.integer("isa_emulated") ? " (emulated)" : "");
      if (layout_of(r) != "auto") d += " / " + layout_of(r);
      if (!vendor(r) && r.integer("opt_level") != 3)
        d += " / O" + std::to_string(r.integer("opt_level"));
      return d;
    };
    const std::string deployment = deployment_of(*best);
    std::string baseline = "-";
    if (base) {
      baseline = "dense + " + base->text("conv_algo");
      if (base->text("conv_algo") != "auto") baseline += " (no auto row)";
      if (base->text("isa") != isa_of(*best)) baseline += " / " + base->text("isa");
    }
    std::string model = short_model(std::get<1>(key));
    if (std::get<3>(key) != 1) model += " (batch " + std::to_string(std::get<3>(key)) + ")";
    std::vector<std::string> row = {model};
    if (any_dataset) row.push_back(std::get<2>(key).empty() ? "-" : std::get<2>(key));
    if (several_cpus) row.push_back(std::get<0>(key));
    if (several_devices) {
      const std::string& device = std::get<4>(key);
      const auto name = gpu_names.find(device);
      row.push_back(name == gpu_names.end() ? device : device + " (" + name->second + ")");
    }
    const std::string schedule = best->text("schedule");
    row.insert(
        row.end(),
        {deployment, std::to_string(best->integer("threads")),
         untuned(*best) ? std::string("untuned") : schedule, fmt(best->real("median_ms"), 4),
         baseline, base ? fmt(base->real("median_ms"), 4) : "-",
         base ? fmt(base->real("median_ms") / best->real("median_ms"), 2) : "-",
         scored ? fmt(100 * scored->real("accuracy"), 2) + (scored != best ? " *" : "") : "-",
         scored && base_scored
             ? points(100 * (scored->real("accuracy") - base_scored->real("accuracy")))
             : "-"});
    if (any_dataset) {
      std::string a = "-";
      if (any != best) {
        a = str(deployment_of(*any), ", ", any->integer("threads"), "T",
                untuned(*any) ? std::string() : " " + any->text("schedule"), ": ",
                fmt(any->real("median_ms"), 4), " ms");
        if (const Row* s = scored_row(any)) a += ", top-1 " + fmt(100 * s->real("accuracy"), 2);
      }
      row.push_back(a);
    }
    t.cells.push_back(row);
  }
  return t;
}

}  // namespace dlas::study::analysis

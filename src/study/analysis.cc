#include "study/analysis.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <numeric>
#include <set>
#include <sstream>

namespace dlas::study {

std::string algorithm_of(const Row& row) {
  const std::string backend = row.text("backend");
  return backend.empty() || backend == "dlas" ? row.text("conv_algo") : backend;
}

namespace analysis {
std::string device_of(const Row& row) {
  const std::string d = row.text("device");
  return d.empty() ? std::string("cpu") : d;
}
}  // namespace analysis

std::string platform_of(const Row& row) {
  std::string schedule = row.text("schedule");
  if (schedule.empty()) schedule = "default";
  // A GPU: its name and device (cuDNN's rows and dlas's CUDA plan share the platform).
  if (const std::string device = analysis::device_of(row); device != "cpu") {
    const std::string gpu = row.text("gpu");
    return (gpu.empty() ? std::string("GPU") : gpu) + " / " + device + " / " + schedule;
  }
  // A vendor backend picks its own ISA path: it runs on the detected one.
  const bool vendor = !row.text("backend").empty() && row.text("backend") != "dlas";
  std::string isa = vendor ? row.text("detected_isa") : row.text("isa");
  if (!vendor && row.integer("isa_emulated") != 0) isa += " (emulated)";
  std::string cpu = row.text("cpu_model");
  if (cpu.empty()) cpu = "unknown CPU";
  return cpu + " / " + isa + " / " + std::to_string(row.integer("threads")) + "T / " + schedule;
}

namespace analysis {

const Variant* Context::fastest(
    const std::function<bool(const std::pair<std::string, std::string>&)>& pred) const {
  const Variant* best = nullptr;
  for (const auto& [k, v] : variants)
    if (pred(k) && (!best || v.median_ms < best->median_ms)) best = &v;
  return best;
}

std::vector<Context> contexts_of(const std::vector<Row>& rows) {
  using Key = std::tuple<std::string, std::string, int64_t, int64_t, std::string>;
  std::map<Key, Context> by_key;
  auto variant_of = [](const Row& r) {
    Variant v;
    v.algorithm = algorithm_of(r);
    v.compress = r.text("compress").empty() ? "dense" : r.text("compress");
    v.variant_id = r.text("variant_id");
    v.median_ms = r.real("median_ms");
    v.p10_ms = r.real("p10_ms");
    v.p90_ms = r.real("p90_ms");
    v.cv = r.real("cv");
    v.params = r.integer("params");
    v.macs = r.integer("macs");
    v.has_accuracy = r.has("accuracy");
    v.accuracy = r.real("accuracy");
    v.top5 = r.has("top5") ? r.real("top5") : -1;
    v.nonzero_params = r.has("nonzero_params") ? r.integer("nonzero_params") : v.params;
    v.schedule = r.text("schedule");
    v.tuning_s = r.real("tuning_s");
    v.tuning_trials = r.integer("tuning_trials");
    v.vendor = !r.text("backend").empty() && r.text("backend") != "dlas";
    return v;
  };
  // Rows stored before layouts were a dimension ran the engine's default: auto.
  auto layout_of = [](const Row& r) {
    const std::string l = r.text("layout");
    return l.empty() ? std::string("auto") : l;
  };
  auto add = [](Context& c, const Variant& v) {
    auto [it, inserted] = c.variants.try_emplace({v.algorithm, v.compress}, v);
    if (!inserted && v.median_ms < it->second.median_ms) it->second = v;
  };
  auto usable = [](const Row& r) { return r.text("status") == kStatusOk && r.has("median_ms"); };
  // The same model built for two datasets is two models.
  auto model_of = [](const Row& r) {
    const std::string dataset = r.text("dataset");
    return r.text("model") + (dataset.empty() ? "" : " @" + dataset);
  };
  auto vendor = [](const Row& r) {
    return !r.text("backend").empty() && r.text("backend") != "dlas";
  };
  for (const Row& r : rows) {
    if (!usable(r) || vendor(r)) continue;
    const std::string platform = platform_of(r);
    Context& c = by_key[Key{platform, model_of(r), r.integer("batch"), r.integer("opt_level"),
                            layout_of(r)}];
    c.platform = platform;
    c.device = device_of(r);
    c.model = model_of(r);
    c.dataset = r.text("dataset");
    c.batch = r.integer("batch");
    c.opt_level = r.integer("opt_level");
    c.threads = r.integer("threads");
    c.schedule = r.text("schedule");
    c.layout = layout_of(r);
    add(c, variant_of(r));
  }
  // A vendor library (oneDNN, cuDNN) has no opt level or activation layout of dlas's: it is a
  // reference point in every dlas context of its platform, model and batch (a context of
  // its own only when dlas has none there).
  std::vector<Key> dlas_keys;
  for (const auto& [k, c] : by_key) dlas_keys.push_back(k);
  for (const Row& r : rows) {
    if (!usable(r) || !vendor(r)) continue;
    const std::string platform = platform_of(r);
    bool placed = false;
    for (const Key& k : dlas_keys)
      if (std::get<0>(k) == platform && std::get<1>(k) == model_of(r) &&
          std::get<2>(k) == r.integer("batch")) {
        add(by_key[k], variant_of(r));
        placed = true;
      }
    if (placed) continue;
    Context& c =
        by_key[Key{platform, model_of(r), r.integer("batch"), r.integer("opt_level"), "auto"}];
    c.platform = platform;
    c.device = device_of(r);
    c.model = model_of(r);
    c.dataset = r.text("dataset");
    c.batch = r.integer("batch");
    c.opt_level = r.integer("opt_level");
    c.threads = r.integer("threads");
    c.schedule = r.text("schedule");
    add(c, variant_of(r));
  }
  std::vector<Context> out;
  for (auto& [k, c] : by_key) out.push_back(std::move(c));
  return out;
}

std::string platform_label(const Context& c) {
  return c.layout == "auto" ? c.platform : c.platform + " / " + c.layout;
}

std::string untuned_twin_key(const Context& c) {
  return c.platform.substr(0, c.platform.rfind(" / ")) + "|" + c.model + "|" +
         std::to_string(c.batch) + "|" + std::to_string(c.opt_level) + "|" + c.layout;
}

std::vector<std::string> layouts_of(const std::vector<Context>& contexts) {
  std::set<std::string> seen;
  for (const Context& c : contexts)
    for (const auto& [k, v] : c.variants)
      if (!v.vendor) seen.insert(c.layout);
  std::vector<std::string> out;
  for (const char* known : {"nchw", "nchwc", "auto"})
    if (seen.erase(known)) out.push_back(known);
  out.insert(out.end(), seen.begin(), seen.end());
  return out;
}

bool is_tuned(const std::string& schedule) { return schedule.rfind("tuned", 0) == 0; }

std::string fmt(double v, int digits) {
  if (!std::isfinite(v)) return "nan";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

double expected_speedup(const std::string& compress, int64_t dense_macs, int64_t macs) {
  double total = 1.0;
  std::stringstream parts(compress);
  std::string part;
  while (std::getline(parts, part, '+')) {
    // "wp:S[:scope]", "cp:S[:scope]", "bp:BxC:S[:scope]", "fp16", "int8[:calibrator]".
    std::vector<std::string> f;
    std::stringstream fields(part);
    for (std::string x; std::getline(fields, x, ':');) f.push_back(x);
    const std::string kind = f.empty() ? "" : f[0];
    const size_t at = kind == "bp" ? 2 : 1;
    std::string level = f.size() > at ? f[at] : "";
    if (level.rfind("elbow=", 0) == 0) level = level.substr(6);  // a resolved elbow level
    const double s = level.empty() ? 0.0 : std::atof(level.c_str());
    if (kind == "dense") {
    } else if (kind == "wp" || kind == "bp") {
      if (!(s >= 0 && s < 1)) return 0;
      total *= 1.0 / (1.0 - s);
    } else if (kind == "cp") {
      if (dense_macs <= 0 || macs <= 0) return 0;
      total *= static_cast<double>(dense_macs) / static_cast<double>(macs);
    } else if (kind == "fp16" || kind == "bf16") {
      total *= 2.0;
    } else if (kind == "int8") {
      total *= 4.0;
    } else {
      return 0;
    }
  }
  return total;
}

std::vector<Speedup> speedups(const std::vector<Context>& contexts) {
  std::vector<Speedup> out;
  for (const Context& c : contexts)
    for (const auto& [k, v] : c.variants) {
      if (k.second == "dense") continue;
      auto dense = c.variants.find({k.first, "dense"});
      if (dense == c.variants.end() || v.median_ms <= 0) continue;
      const double expected = expected_speedup(k.second, dense->second.macs, v.macs);
      if (expected <= 0) continue;
      out.push_back({&c, k.first, k.second, dense->second.median_ms, v.median_ms, expected,
                     dense->second.median_ms / v.median_ms});
    }
  return out;
}

double pearson(const std::vector<double>& x, const std::vector<double>& y) {
  const double n = static_cast<double>(x.size());
  const double mx = std::accumulate(x.begin(), x.end(), 0.0) / n;
  const double my = std::accumulate(y.begin(), y.end(), 0.0) / n;
  double sxy = 0, sxx = 0, syy = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    sxy += (x[i] - mx) * (y[i] - my);
    sxx += (x[i] - mx) * (x[i] - mx);
    syy += (y[i] - my) * (y[i] - my);
  }
  return sxx > 0 && syy > 0 ? sxy / std::sqrt(sxx * syy) : std::nan("");
}

namespace {
// Ranks 1..n with ties given their average rank.
std::vector<double> ranks(const std::vector<double>& v) {
  std::vector<size_t> idx(v.size());
  std::iota(idx.begin(), idx.end(), 0);
  std::sort(idx.begin(), idx.end(), [&](size_t a, size_t b) { return v[a] < v[b]; });
  std::vector<double> r(v.size());
  for (size_t i = 0; i < idx.size();) {
    size_t j = i;
    while (j + 1 < idx.size() && v[idx[j + 1]] == v[idx[i]]) ++j;
    for (size_t k = i; k <= j; ++k) r[idx[k]] = 0.5 * static_cast<double>(i + j) + 1.0;
    i = j + 1;
  }
  return r;
}
}  // namespace

double spearman(const std::vector<double>& x, const std::vector<double>& y) {
  return pearson(ranks(x), ranks(y));
}

std::vector<Correlation> correlations(const std::vector<Context>& contexts) {
  // platform -> model -> (params, macs, accuracy?, best dense ms); batch 1 and opt 3
  // contexts preferred, else the first seen.
  struct M {
    double params, macs, accuracy, ms;
    bool has_accuracy;
  };
  std::map<std::string, std::map<std::string, M>> data;
  for (const Context& c : contexts) {
    const Variant* best = c.fastest([](const auto& k) { return k.second == "dense"; });
    if (!best) continue;
    auto& models = data[c.platform];
    if (models.count(c.model)) continue;
    models[c.model] = {static_cast<double>(best->params), static_cast<double>(best->macs),
                       best->accuracy, best->median_ms, best->has_accuracy};
  }
  std::vector<Correlation> out;
  for (const auto& [platform, models] : data) {
    if (models.size() < 3) continue;
    bool all_acc = true;
    for (const auto& [m, v] : models) all_acc = all_acc && v.has_accuracy;
    std::vector<std::pair<std::string, std::function<double(const M&)>>> dims = {
        {"params", [](const M& m) { return m.params; }},
        {"macs", [](const M& m) { return m.macs; }},
        {"latency_ms", [](const M& m) { return m.ms; }}};
    if (all_acc) dims.insert(dims.begin() + 2, {"accuracy", [](const M& m) { return m.accuracy; }});
    for (size_t i = 0; i < dims.size(); ++i)
      for (size_t j = i + 1; j < dims.size(); ++j) {
        std::vector<double> x, y;
        for (const auto& [m, v] : models)
          x.push_back(dims[i].second(v)), y.push_back(dims[j].second(v));
        out.push_back({platform, dims[i].first, dims[j].first, static_cast<int>(models.size()),
                       spearman(x, y), pearson(x, y)});
      }
  }
  return out;
}

}  // namespace analysis
}  // namespace dlas::study

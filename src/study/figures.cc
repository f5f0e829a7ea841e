// The report's figures, chosen from the contexts: speedup and latency heatmaps per
// platform (a panel per model), accuracy against compression, the platform comparison,
// MACs against latency, and the prune-sweep curves. Drawn by the kinds of plots.h.
#include "study/figures.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <sstream>

namespace dlas::study {

namespace {

using analysis::Context;
using analysis::fmt;
using plots::Figure;

std::string slug(const std::string& s) {
  std::string o;
  for (char c : s) {
    if (std::isalnum(static_cast<unsigned char>(c)))
      o += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    else if (!o.empty() && o.back() != '-')
      o += '-';
  }
  while (!o.empty() && o.back() == '-') o.pop_back();
  return o.empty() ? "x" : o;
}

// A panel's title: the model (short), then batch and opt level when not the defaults.
std::string panel_title(const Context& c) {
  const std::string model = c.dataset.empty() ? c.model : c.model.substr(0, c.model.find(" @"));
  std::string t = analysis::short_model(model);
  if (c.batch != 1) t += ", batch " + std::to_string(c.batch);
  if (c.opt_level != 3) t += ", O" + std::to_string(c.opt_level);
  return t;
}

// Algorithms in the stack's order (dense ones, sparse ones, auto), then others, vendor last.
std::vector<std::string> ordered_algorithms(const std::set<std::string>& algos,
                                            const std::set<std::string>& vendors) {
  static const char* kOrder[] = {
      "direct",      "gemm",          "spatial-pack",        "winograd", "depthwise", "sparse-1x1",
      "sparse-gemm", "sparse-direct", "sparse-spatial-pack", "auto"};
  auto rank = [&](const std::string& a) {
    if (vendors.count(a)) return 1000;
    for (size_t i = 0; i < std::size(kOrder); ++i)
      if (a == kOrder[i]) return static_cast<int>(i);
    const std::string base = a.substr(0, a.find(':'));  // "sparse-direct:format=csr"
    for (size_t i = 0; i < std::size(kOrder); ++i)
      if (base == kOrder[i]) return static_cast<int>(i);
    return 500;
  };
  std::vector<std::string> v(algos.begin(), algos.end());
  std::stable_sort(v.begin(), v.end(),
                   [&](const std::string& a, const std::string& b) { return rank(a) < rank(b); });
  return v;
}

// Compressions: dense first, then by expected speedup (the pruning level orders a method's
// levels), then by name.
std::vector<std::string> ordered_compressions(const std::set<std::string>& comps) {
  std::vector<std::string> v(comps.begin(), comps.end());
  auto key = [](const std::string& c) {
    return std::make_tuple(c == "dense" ? 0 : 1, c.substr(0, c.find(':')),
                           analysis::expected_speedup(c, 1, 1), c);
  };
  std::stable_sort(v.begin(), v.end(),
                   [&](const std::string& a, const std::string& b) { return key(a) < key(b); });
  return v;
}

size_t index_of(const std::vector<std::string>& v, const std::string& x) {
  return static_cast<size_t>(std::find(v.begin(), v.end(), x) - v.begin());
}

// Three significant digits.
std::string sig3(double v) {
  const int digits = v >= 100 ? 0 : v >= 10 ? 1 : v >= 1 ? 2 : v >= 0.1 ? 3 : 4;
  return fmt(v, digits);
}

// Contexts grouped by platform label, in context order.
std::vector<std::pair<std::string, std::vector<const Context*>>> by_platform(
    const std::vector<Context>& contexts) {
  std::vector<std::pair<std::string, std::vector<const Context*>>> out;
  for (const Context& c : contexts) {
    const std::string p = analysis::platform_label(c);
    if (out.empty() || out.back().first != p) {
      auto it = std::find_if(out.begin(), out.end(), [&](const auto& e) { return e.first == p; });
      if (it == out.end()) {
        out.push_back({p, {}});
        it = std::prev(out.end());
      }
      it->second.push_back(&c);
    } else {
      out.back().second.push_back(&c);
    }
  }
  return out;
}

// Speedup over dense, per algorithm x compression, a panel per model.
void add_speedup_heatmap(std::vector<Figure>& figs, const std::string& platform,
                         const std::vector<const Context*>& ctxs,
                         const std::vector<analysis::Speedup>& all) {
  std::set<std::string> algos, comps, vendors;
  std::map<const Context*, std::vector<const analysis::Speedup*>> per;
  for (const analysis::Speedup& s : all)
    if (std::find(ctxs.begin(), ctxs.end(), s.context) != ctxs.end()) {
      per[s.context].push_back(&s);
      algos.insert(s.algorithm);
      comps.insert(s.compress);
      if (s.context->variants.at({s.algorithm, s.compress}).vendor) vendors.insert(s.algorithm);
    }
  if (per.empty()) return;
  plots::Heatmap map;
  map.xlabel = "algorithm";
  map.ylabel = "compression";
  map.columns = ordered_algorithms(algos, vendors);
  map.rows = ordered_compressions(comps);
  map.scale = plots::HeatScale::kRatioAroundOne;
  for (const Context* c : ctxs) {
    if (!per.count(c)) continue;
    plots::HeatPanel p{panel_title(*c), {}};
    double best = 0;
    for (const analysis::Speedup* s : per[c]) best = std::max(best, s->achieved);
    for (const analysis::Speedup* s : per[c])
      p.cells.push_back({index_of(map.columns, s->algorithm), index_of(map.rows, s->compress),
                         s->achieved,
                         sig3(s->achieved) + "×\n" + sig3(100 * s->achieved / s->expected) + "%",
                         s->achieved == best});
    map.panels.push_back(std::move(p));
  }
  figs.push_back(plots::heatmap_figure(
      "speedup-" + slug(platform), "Speedup over dense, " + platform,
      "Each compressed variant against the dense variant of the same model and algorithm on " +
          platform +
          ": top line the speedup (dense median / compressed median, ×), bottom line the share "
          "of the expected speedup it reaches (expected: 1/(1−s) for weight and block pruning, "
          "the MAC ratio for channel pruning, 2× fp16/bf16, 4× int8, multiplied when "
          "composed). Blue: faster than dense, red: slower, white: the same; outlined: the "
          "panel's largest speedup; grey: not measured.",
      map));
}

// Median latency per algorithm x compression, a panel per model.
void add_latency_heatmap(std::vector<Figure>& figs, const std::string& platform,
                         const std::vector<const Context*>& ctxs) {
  std::set<std::string> algos, comps, vendors;
  for (const Context* c : ctxs)
    for (const auto& [k, v] : c->variants) {
      algos.insert(k.first);
      comps.insert(k.second);
      if (v.vendor) vendors.insert(k.first);
    }
  plots::Heatmap map;
  map.xlabel = "algorithm / backend";
  map.ylabel = "compression";
  map.columns = ordered_algorithms(algos, vendors);
  map.rows = ordered_compressions(comps);
  map.scale = plots::HeatScale::kRatioToBest;
  for (const Context* c : ctxs) {
    const analysis::Variant* best = c->fastest([](const auto&) { return true; });
    plots::HeatPanel p{panel_title(*c), {}};
    for (const auto& [k, v] : c->variants)
      p.cells.push_back({index_of(map.columns, k.first), index_of(map.rows, k.second),
                         v.median_ms / best->median_ms, sig3(v.median_ms), &v == best});
    map.panels.push_back(std::move(p));
  }
  figs.push_back(plots::heatmap_figure(
      "latency-" + slug(platform), "Median latency (ms), " + platform,
      "Median latency in ms of every variant on " + platform +
          ", per algorithm (or vendor backend) and compression. Colour: how much slower than "
          "the panel's fastest variant (outlined): green the fastest, yellow about 2×, red 16× "
          "or more; grey: not measured.",
      map));
}

// Bits a parameter is stored in under a compression spec (int8 8, fp16/bf16 16, else 32).
int storage_bits(const std::string& compress) {
  if (compress.find("int8") != std::string::npos) return 8;
  if (compress.find("fp16") != std::string::npos || compress.find("bf16") != std::string::npos)
    return 16;
  return 32;
}

// "wp:0.9:layer+int8" -> "weight pruning + int8".
std::string method_of(const std::string& compress) {
  static const std::map<std::string, std::string> kNames = {
      {"wp", "weight pruning"}, {"bp", "block pruning"}, {"cp", "channel pruning"}};
  std::string out;
  std::stringstream parts(compress);
  for (std::string part; std::getline(parts, part, '+');) {
    const std::string kind = part.substr(0, part.find(':'));
    const auto it = kNames.find(kind);
    out += (out.empty() ? "" : " + ") + (it == kNames.end() ? kind : it->second);
  }
  return out;
}

// Top-1 against the compression ratio, a line per method from dense, a panel per model.
void add_accuracy_figure(std::vector<Figure>& figs, const std::vector<Context>& contexts) {
  // model -> compression -> (ratio, top-1 %), from the first context that scored it.
  std::map<std::string, std::map<std::string, std::pair<double, double>>> data;
  std::vector<const Context*> order;
  for (const Context& c : contexts) {
    const analysis::Variant* dense = c.fastest(
        [&](const auto& k) { return k.second == "dense" && c.variants.at(k).has_accuracy; });
    if (!dense) continue;
    const std::string key = panel_title(c) + (c.dataset.empty() ? "" : " on " + c.dataset);
    auto& m = data[key];
    if (m.empty()) order.push_back(&c);
    for (const auto& [k, v] : c.variants) {
      if (!v.has_accuracy || m.count(k.second) || v.nonzero_params <= 0) continue;
      const analysis::Variant* best = c.fastest(
          [&](const auto& x) { return x.second == k.second && c.variants.at(x).has_accuracy; });
      const double ratio = 32.0 * static_cast<double>(dense->nonzero_params) /
                           (storage_bits(k.second) * static_cast<double>(best->nonzero_params));
      m[k.second] = {ratio, 100 * best->accuracy};
    }
  }
  if (data.empty()) return;
  std::vector<plots::LinePanel> panels;
  for (const Context* c : order) {
    const std::string key = panel_title(*c) + (c->dataset.empty() ? "" : " on " + c->dataset);
    const auto& m = data[key];
    const auto dense = m.find("dense");
    std::map<std::string, plots::Series> series;
    std::set<std::string> comps;
    for (const auto& [comp, v] : m) comps.insert(comp);
    for (const std::string& comp : ordered_compressions(comps)) {
      if (comp == "dense") continue;
      plots::Series& s = series[method_of(comp)];
      if (s.xy.empty()) {
        s.name = method_of(comp);
        s.xy.push_back(dense->second);
        s.labels.push_back("");
      }
      s.xy.push_back(m.at(comp));
      s.labels.push_back(comp);
    }
    plots::LinePanel p{key, {}};
    if (series.empty()) p.series.push_back({"dense only", {dense->second}, {"dense"}, false});
    for (auto& [name, s] : series) {
      std::vector<size_t> idx(s.xy.size());
      for (size_t i = 0; i < idx.size(); ++i) idx[i] = i;
      std::stable_sort(idx.begin(), idx.end(),
                       [&](size_t a, size_t b) { return s.xy[a].first < s.xy[b].first; });
      plots::Series sorted{s.name, {}, {}, true};
      for (size_t i : idx) sorted.xy.push_back(s.xy[i]), sorted.labels.push_back(s.labels[i]);
      p.series.push_back(std::move(sorted));
    }
    panels.push_back(std::move(p));
  }
  plots::Axes axes;
  axes.xlabel = "compression ratio (×, log scale)";
  axes.ylabel = "top-1 accuracy (%)";
  axes.logx = true;
  axes.log_base = 2;
  axes.xformat = "%g×";
  figs.push_back(plots::line_figure(
      "accuracy-compression", "Top-1 accuracy against compression",
      "Top-1 (%) of each compression on the study's test images (the fastest scored variant), "
      "against its compression ratio: dense fp32 parameter bits / nonzero parameter bits, with "
      "32-bit floats, 16 bits for fp16/bf16 and 8 for int8. A line per method, starting at "
      "dense (1×); each point is labelled with its compression.",
      axes, panels));
}

// Speedup of each platform (CPU / ISA path / threads) over the first, per model: the
// fastest variant measured on it (any compression, algorithm, tuning or layout).
void add_platform_figure(std::vector<Figure>& figs, const std::vector<Context>& contexts) {
  std::vector<std::string> platforms, models;
  std::map<std::pair<std::string, std::string>, double> best;  // (model, platform) -> ms
  std::set<std::string> cpus;
  for (const Context& c : contexts) {
    const std::string p = c.platform.substr(0, c.platform.rfind(" / "));  // schedule left out
    cpus.insert(p.substr(0, p.find(" / ")));
    const std::string m = panel_title(c);
    if (std::find(platforms.begin(), platforms.end(), p) == platforms.end()) platforms.push_back(p);
    if (std::find(models.begin(), models.end(), m) == models.end()) models.push_back(m);
    const analysis::Variant* v = c.fastest([](const auto&) { return true; });
    auto [it, inserted] = best.try_emplace({m, p}, v->median_ms);
    if (!inserted) it->second = std::min(it->second, v->median_ms);
  }
  if (platforms.size() < 2) return;
  // CPUs first, fewer threads first: the reference is the smallest platform; GPUs
  // ("NAME / cuda:N") last.
  std::stable_sort(platforms.begin(), platforms.end(), [&](const auto& a, const auto& b) {
    auto rank = [](const std::string& p) {
      const size_t t = p.rfind(" / ");
      const bool gpu = p.compare(t + 3, 5, "cuda:") == 0;
      return std::make_pair(gpu, std::atoi(p.c_str() + t + 3));
    };
    return rank(a) < rank(b);
  });
  std::vector<plots::BarSeries> series;
  for (const std::string& p : platforms) {
    plots::BarSeries s{cpus.size() == 1 ? p.substr(p.find(" / ") + 3) : p, {}};
    for (const std::string& m : models) {
      const auto ref = best.find({m, platforms[0]});
      const auto it = best.find({m, p});
      s.values.push_back(ref == best.end() || it == best.end() ? NAN : ref->second / it->second);
    }
    series.push_back(std::move(s));
  }
  const std::string ref_name = series[0].name;
  figs.push_back(plots::bar_figure(
      "platforms", "Platform comparison: speedup over " + ref_name,
      "Per model, the fastest variant measured on each platform (CPU / ISA path / threads, or "
      "GPU / device; any "
      "compression, algorithm, tuning or layout), as a speedup over the fastest on " +
          ref_name + " (its median / the platform's median, ×; dashed: 1×)." +
          (cpus.size() == 1 ? " CPU: " + *cpus.begin() + "." : ""),
      "speedup over " + ref_name + " (×)", models, series, "%.2f×", 1.0));
}

// MACs against the fastest dense latency, a panel per platform, a colour and marker per
// model (observation I).
void add_macs_figure(
    std::vector<Figure>& figs,
    const std::vector<std::pair<std::string, std::vector<const Context*>>>& groups) {
  std::vector<plots::LinePanel> panels;
  for (const auto& [platform, ctxs] : groups) {
    plots::LinePanel p{platform, {}};
    for (const Context* c : ctxs) {
      const analysis::Variant* v = c->fastest([](const auto& k) { return k.second == "dense"; });
      if (v && v->macs > 0)
        p.series.push_back(
            {panel_title(*c), {{static_cast<double>(v->macs), v->median_ms}}, {}, false});
    }
    if (p.series.size() >= 2) panels.push_back(std::move(p));
  }
  if (panels.empty()) return;
  plots::Axes axes;
  axes.xlabel = "MACs per inference (log scale)";
  axes.ylabel = "median latency (ms, log scale)";
  axes.logx = axes.logy = true;
  axes.xformat = "%.0s%c";
  figs.push_back(plots::line_figure(
      "macs-latency", "MACs against latency",
      "Each model's MACs against the median latency of its fastest dense variant, a panel per "
      "platform (the paper's observation I: MACs and latency need not be correlated).",
      axes, panels));
}

// The prune-sweeps (Fig. 3): top-1 against fraction pruned, a line per method, the elbow
// circled, a panel per model and dataset.
void add_sweep_figure(std::vector<Figure>& figs, const std::vector<SweepResult>& sweeps) {
  std::vector<std::pair<std::string, std::string>> keys;
  std::map<std::pair<std::string, std::string>, plots::LinePanel> panels;
  for (const SweepResult& s : sweeps) {
    const std::pair<std::string, std::string> key{s.model, s.dataset};
    if (!panels.count(key)) {
      keys.push_back(key);
      panels[key].title =
          analysis::short_model(s.model) + (s.dataset.empty() ? "" : " on " + s.dataset);
    }
    plots::Series line{sweep_method_name(s.method), {{0.0, 100 * s.baseline.top1}}, {}, true};
    for (const SweepPoint& p : s.points)
      if (p.top1 >= 0) line.xy.push_back({p.level, 100 * p.top1});
    panels[key].series.push_back(std::move(line));
    if (s.elbow >= 0) {
      const SweepPoint& e = s.points[static_cast<size_t>(s.elbow)];
      plots::Series ring{
          "elbow (highest level within tolerance)", {{e.level, 100 * e.top1}}, {}, false};
      ring.hollow = true;
      panels[key].series.push_back(std::move(ring));
    }
  }
  if (keys.empty()) return;
  std::vector<plots::LinePanel> list;
  for (const auto& k : keys) list.push_back(panels[k]);
  plots::Axes axes;
  axes.xlabel = "fraction pruned (weights or channels)";
  axes.ylabel = "top-1 accuracy (%)";
  axes.xmin = 0;
  axes.xmax = 1;
  figs.push_back(plots::line_figure(
      "prune-sweeps", "Top-1 accuracy against fraction pruned (prune-sweeps)",
      "From the prune-sweep folders: top-1 (%) after fine-tuning at each pruning level, a line "
      "per method; the ring marks the elbow (the highest level within the sweep's tolerance of "
      "the baseline, which `elbow` in a spec deploys).",
      axes, list));
}

}  // namespace

std::vector<Figure> report_figures(const std::vector<Context>& contexts,
                                   const std::vector<SweepResult>& sweeps) {
  std::vector<Figure> figs;
  const auto groups = by_platform(contexts);
  const std::vector<analysis::Speedup> sps = analysis::speedups(contexts);
  for (const auto& [platform, ctxs] : groups) add_speedup_heatmap(figs, platform, ctxs, sps);
  add_accuracy_figure(figs, contexts);
  add_sweep_figure(figs, sweeps);
  add_platform_figure(figs, contexts);
  for (const auto& [platform, ctxs] : groups) add_latency_heatmap(figs, platform, ctxs);
  add_macs_figure(figs, groups);
  return figs;
}

}  // namespace dlas::study

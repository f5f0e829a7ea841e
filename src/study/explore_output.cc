// What `dlas explore` leaves in DIR: explore.json, best.onnx (+ best.records.jsonl),
// README.md (the reproduce commands and what each dimension contributed) and report.html
// (accuracy against latency and against size, the front drawn).
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <sstream>

#include "dlas/core/error.h"
#include "dlas/core/file.h"
#include "dlas/core/progress.h"
#include "dlas/study/report.h"
#include "dlas/study/runner.h"
#include "dlas/system/peer_executor.h"
#include "explore_internal.h"

namespace dlas::study {

namespace fs = std::filesystem;

namespace {

std::string shell_quote(const std::string& s) {
  if (!s.empty() && s.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                        "0123456789_-./:=+,") == std::string::npos)
    return s;
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

}  // namespace

std::string Explorer::reproduce_commands(const ExploreCandidate& c) const {
  const bool tuned = c.schedule != "default";
  std::string common = str(" --compress ", shell_quote(c.compress), " --threads ", threads_);
  std::string engine;
  if (c.backend == "dlas") {
    engine = str(" --conv-algo ", shell_quote(c.conv_algo), " --layout ", c.layout,
                 tuned ? " --records best.records.jsonl" : "");
  }
  std::string pre;
  for (const std::string& a : o_.preprocess.to_args()) pre += str(" ", shell_quote(a));
  std::string out =
      str("dlas bench best.onnx", common, engine,
          c.backend == "dlas" ? std::string() : str(" --backend ", c.backend), " --repeat 150\n");
  // The accuracy run: dlas's engine (a peer recommendation runs the same fp32 model), at the
  // batch the race scored with: int8 calibrates on 500 training images in batches of the
  // model's batch, and a different batch can move a few test answers.
  out += str("dlas eval best.onnx --dataset ", shell_quote(o_.dataset), " --batch 1", common,
             c.backend == "dlas" ? engine : "", pre, "\n");
  return out;
}

std::string Explorer::json() const {
  using J = nlohmann::ordered_json;
  J j;
  j["model"] = o_.model;
  j["dataset"] = o_.dataset;
  j["metric"] = explore_metric_name(o_.metric);
  j["max_drop_points"] = o_.max_drop;
  j["threads"] = threads_;
  j["test_images"] = n_;
  j["seconds"] = r_.seconds;
  j["finetune_seconds"] = finetune_s_;
  j["budget_s"] = o_.budget_s;
  j["budget_reached"] = r_.budget_reached;
  j["children_this_run"] = {{"latency", r_.latency_runs},
                            {"scoring", r_.scoring_runs},
                            {"final", r_.final_runs},
                            {"gate", r_.gate_runs}};
  j["cpu"] = current_host().cpu_model;
  j["isa"] = current_host().detected_isa;
  J groups = J::array();
  for (const ExploreGroup& g : r_.groups) {
    J x;
    x["model"] = g.label;
    x["source"] = g.source;
    x["model_path"] = g.model_path;
    x["compress"] = g.compress;
    x["state"] = g.state;
    if (!g.reason.empty()) x["reason"] = g.reason;
    x["samples"] = g.samples;
    x["accuracy"] = g.samples > 0 ? J(g.accuracy) : J();
    x["drop_points"] = g.samples > 0 ? J(100 * (r_.groups[0].accuracy - g.accuracy)) : J();
    x["drop_interval_points"] = g.samples > 0 ? J::array({g.drop_low, g.drop_high}) : J();
    x["seconds"] = g.seconds;
    groups.push_back(x);
  }
  j["models"] = groups;
  J cands = J::array();
  for (size_t i = 0; i < r_.candidates.size(); ++i) {
    const ExploreCandidate& c = r_.candidates[i];
    const int gi = group_index(c.group);
    J x;
    x["label"] = c.label;
    x["model"] = gi >= 0 ? r_.groups[static_cast<size_t>(gi)].label : c.group;
    x["compress"] = c.compress;
    x["backend"] = c.backend;
    x["conv_algo"] = c.conv_algo;
    x["layout"] = c.layout;
    x["schedule"] = c.schedule;
    x["status"] = c.status;
    if (!c.reason.empty()) x["reason"] = c.reason;
    x["median_ms"] = c.median_ms >= 0 ? J(c.median_ms) : J();
    x["p90_ms"] = c.p90_ms >= 0 ? J(c.p90_ms) : J();
    x["weight_bytes"] = c.size_bytes >= 0 ? J(c.size_bytes) : J();
    x["peak_rss_bytes"] = c.peak_bytes >= 0 ? J(c.peak_bytes) : J();
    x["activation_bytes"] = c.activation_bytes >= 0 ? J(c.activation_bytes) : J();
    const double acc = accuracy_of_candidate(static_cast<int>(i));
    x["accuracy"] =
        acc >= 0 && gi >= 0 && r_.groups[static_cast<size_t>(gi)].samples > 0 ? J(acc) : J();
    if (gi >= 0) {
      const ExploreGroup& g = r_.groups[static_cast<size_t>(gi)];
      x["accuracy_samples"] = g.samples;
      x["accuracy_interval_points"] = g.samples > 0
                                          ? J::array({100 * r_.groups[0].accuracy - g.drop_high,
                                                      100 * r_.groups[0].accuracy - g.drop_low})
                                          : J();
    }
    x["own_scoring"] = exact_hits_.count(c.variant_id) > 0;
    x["seconds"] = c.seconds;
    x["variant_id"] = c.variant_id;
    cands.push_back(x);
  }
  j["candidates"] = cands;
  J front = J::array();
  for (int i : r_.front) front.push_back(r_.candidates[static_cast<size_t>(i)].label);
  j["front"] = front;
  const ExploreCandidate& rec = r_.candidates[static_cast<size_t>(r_.recommendation)];
  J rj;
  rj["label"] = rec.label;
  rj["engine"] = rec.backend == "dlas" ? "dlas" : rec.backend;
  rj["compress"] = rec.compress;
  rj["conv_algo"] = rec.conv_algo;
  rj["layout"] = rec.layout;
  rj["schedule"] = rec.schedule;
  rj["median_ms"] = rec.median_ms;
  rj["accuracy"] = accuracy_of_candidate(r_.recommendation);
  rj["drop_points"] = 100 * (r_.groups[0].accuracy - accuracy_of_candidate(r_.recommendation));
  rj["weight_bytes"] = rec.size_bytes;
  j["recommendation"] = rj;
  J fin = J::array();
  for (const FinalRow& f : finals_) {
    J x;
    x["role"] = f.role;
    x["recommended"] = f.candidate == r_.recommendation;
    x["label"] = r_.candidates[static_cast<size_t>(f.candidate)].label;
    const double m = final_median(f.candidate);
    x["median_ms"] = m > 0 ? J(m) : J();
    const double speedup = final_speedup(f.candidate);
    x["speedup_over_dense"] = speedup > 0 ? J(speedup) : J();
    x["accuracy"] = accuracy_of_candidate(f.candidate);
    x["round_medians_ms"] = f.medians;
    fin.push_back(x);
  }
  j["final_comparison"] = fin;
  return j.dump(2) + "\n";
}

std::string Explorer::readme() const {
  const ExploreCandidate& rec = r_.candidates[static_cast<size_t>(r_.recommendation)];
  const ExploreGroup& dense = r_.groups[0];
  const double base = 100 * dense.accuracy;
  std::ostringstream md;
  md << "# dlas explore: " << o_.model << "\n\n";
  md << "Dataset " << o_.dataset << " (" << n_ << " test images), budget " << num(o_.max_drop)
     << " points of " << explore_metric_name(o_.metric) << " below the dense model ("
     << fixed(base, 2) << "%), " << threads_ << (threads_ == 1 ? " thread" : " threads")
     << ", measured on " << current_host().cpu_model << " (" << current_host().detected_isa
     << ") in " << duration_text(r_.seconds)
     << (r_.budget_reached ? " (the time budget ran out)" : "") << ".\n\n";
  md << "## Recommendation\n\n";
  if (rec.backend != "dlas")
    md << "**The fastest deployment within the budget is a peer engine, " << rec.backend
       << ", not dlas's own engine.**\n\n";
  if (r_.recommendation == r_.dense)
    md << "Nothing faster than the dense model stayed within the budget.\n\n";
  md << "**" << rec.label << "**: " << fixed(rec.median_ms, 3) << " ms median, "
     << fixed(100 * accuracy_of_candidate(r_.recommendation), 2) << "% "
     << explore_metric_name(o_.metric) << " on all " << n_ << " test images, " << rec.size_bytes
     << " weight bytes.\n\n";
  md << "Reproduce its latency and accuracy (here, in this folder):\n\n```\n"
     << reproduce_commands(rec) << "```\n\n";
  md << "## What each dimension contributed\n\n";
  md << "| step | deployment | median ms | speedup | " << explore_metric_name(o_.metric)
     << " % |\n|---|---|---:|---:|---:|\n";
  const ExploreCandidate& d = r_.candidates[static_cast<size_t>(r_.dense)];
  auto line = [&](const std::string& step, int idx) {
    if (idx < 0) return;
    const ExploreCandidate& c = r_.candidates[static_cast<size_t>(idx)];
    md << "| " << step << " | " << c.label << " | " << fixed(c.median_ms, 3) << " | "
       << fixed(d.median_ms / c.median_ms, 2) << "x | "
       << fixed(100 * accuracy_of_candidate(idx), 2) << " |\n";
  };
  line("dense", r_.dense);
  // The recommendation's model under the engine's own choices, then its best untuned
  // algorithm/layout/backend, then tuned.
  int step1 = -1, step2 = -1;
  for (size_t i = 0; i < r_.candidates.size(); ++i) {
    const ExploreCandidate& c = r_.candidates[i];
    if (c.group != rec.group || c.status != kStatusOk) continue;
    if (c.backend == "dlas" && c.conv_algo == "auto" && c.layout == "auto" &&
        c.schedule == "default")
      step1 = static_cast<int>(i);
    if (c.schedule == "default" &&
        (step2 < 0 || c.median_ms < r_.candidates[static_cast<size_t>(step2)].median_ms))
      step2 = static_cast<int>(i);
  }
  line("+ compression", step1);
  if (step2 != step1) line("+ algorithm / layout / engine", step2);
  if (rec.schedule != "default") line("+ tuning", r_.recommendation);
  md << "\nLatencies in this table are from the search (" << o_.repeat
     << " timed runs each); the comparison below times the key deployments again in "
     << o_.final_rounds
     << " interleaved rounds (its speedups are the median of each round's ratio to dense).\n\n";
  md << "## Against the best single-dimension choices (interleaved)\n\n";
  md << "| role | deployment | median ms | speedup over dense | " << explore_metric_name(o_.metric)
     << " % |\n|---|---|---:|---:|---:|\n";
  for (const FinalRow& f : finals_) {
    const double m = final_median(f.candidate), speedup = final_speedup(f.candidate);
    md << "| " << f.role << (f.candidate == r_.recommendation ? " (recommended)" : "") << " | "
       << r_.candidates[static_cast<size_t>(f.candidate)].label << " | "
       << (m > 0 ? fixed(m, 3) : "-") << " | " << (speedup > 0 ? fixed(speedup, 2) + "x" : "-")
       << " | " << fixed(100 * accuracy_of_candidate(f.candidate), 2) << " |\n";
  }
  md << "\n## The models raced\n\n| model | state | images | " << explore_metric_name(o_.metric)
     << " % | drop (99.9% interval) | note |\n|---|---|---:|---:|---|---|\n";
  for (const ExploreGroup& g : r_.groups) {
    md << "| " << g.label << " | " << g.state << " | " << g.samples << " | "
       << (g.samples > 0 ? fixed(100 * g.accuracy, 2) : "-") << " | "
       << (g.samples > 0 ? str("[", fixed(g.drop_low, 2), ", ", fixed(g.drop_high, 2), "]")
                         : std::string("-"))
       << " | " << g.reason << " |\n";
  }
  md << "\nThe Pareto front (latency, accuracy, weight size) and every candidate: explore.json "
        "and report.html. `dlas study report explore.db -o report/` gives the study's tables.\n";
  return md.str();
}

std::string Explorer::html() const {
  // Two scatter plots (accuracy against latency, against weight size) as inline SVG.
  struct Pt {
    double x, y;
    bool front, rec;
    std::string label;
  };
  std::vector<Pt> lat, size;
  for (size_t i = 0; i < r_.candidates.size(); ++i) {
    const ExploreCandidate& c = r_.candidates[i];
    const int gi = group_index(c.group);
    if (c.status != kStatusOk || gi < 0 || r_.groups[static_cast<size_t>(gi)].samples <= 0)
      continue;
    const bool front =
        std::find(r_.front.begin(), r_.front.end(), static_cast<int>(i)) != r_.front.end();
    const double acc = 100 * accuracy_of_candidate(static_cast<int>(i));
    const bool rec = static_cast<int>(i) == r_.recommendation;
    lat.push_back({c.median_ms, acc, front, rec, c.label});
    if (c.size_bytes > 0) size.push_back({c.size_bytes / 1024.0, acc, front, rec, c.label});
  }
  auto svg = [&](const std::vector<Pt>& pts, const std::string& xlabel) {
    const double W = 640, H = 400, L = 60, R = 20, T = 20, B = 50;
    double x0 = 1e300, x1 = -1e300, y0 = 1e300, y1 = -1e300;
    for (const Pt& p : pts) {
      x0 = std::min(x0, std::log10(std::max(p.x, 1e-6)));
      x1 = std::max(x1, std::log10(std::max(p.x, 1e-6)));
      y0 = std::min(y0, p.y);
      y1 = std::max(y1, p.y);
    }
    if (pts.empty()) return std::string("<p>nothing measured</p>");
    if (x1 - x0 < 1e-9) {
      x0 -= 0.5;
      x1 += 0.5;
    }
    if (y1 - y0 < 1e-9) {
      y0 -= 1;
      y1 += 1;
    }
    auto X = [&](double v) {
      return L + (std::log10(std::max(v, 1e-6)) - x0) / (x1 - x0) * (W - L - R);
    };
    auto Y = [&](double v) { return T + (y1 - v) / (y1 - y0) * (H - T - B); };
    std::ostringstream s;
    s << "<svg xmlns='http://www.w3.org/2000/svg' width='" << W << "' height='" << H << "'>";
    s << "<rect x='" << L << "' y='" << T << "' width='" << W - L - R << "' height='" << H - T - B
      << "' fill='none' stroke='#888'/>";
    const double budget = 100 * r_.groups[0].accuracy - o_.max_drop;
    if (budget >= y0 && budget <= y1)
      s << "<line x1='" << L << "' x2='" << W - R << "' y1='" << Y(budget) << "' y2='" << Y(budget)
        << "' stroke='#c33' stroke-dasharray='4 3'/><text x='" << W - R - 4 << "' y='"
        << Y(budget) - 4 << "' font-size='11' text-anchor='end' fill='#c33'>budget</text>";
    std::vector<Pt> fr;
    for (const Pt& p : pts)
      if (p.front) fr.push_back(p);
    std::sort(fr.begin(), fr.end(), [](const Pt& a, const Pt& b) { return a.x < b.x; });
    if (fr.size() > 1) {
      s << "<polyline fill='none' stroke='#2a6' stroke-width='1.5' points='";
      for (const Pt& p : fr) s << X(p.x) << "," << Y(p.y) << " ";
      s << "'/>";
    }
    for (const Pt& p : pts)
      s << "<circle cx='" << X(p.x) << "' cy='" << Y(p.y) << "' r='" << (p.rec ? 6 : 3.5)
        << "' fill='"
        << (p.rec     ? "#d80"
            : p.front ? "#2a6"
                      : "#68a")
        << "' fill-opacity='0.8'><title>" << html_escape(p.label) << ": " << p.x << ", "
        << fixed(p.y, 2) << "%</title></circle>";
    s << "<text x='" << (L + W - R) / 2 << "' y='" << H - 12
      << "' font-size='12' text-anchor='middle'>" << xlabel << " (log scale, "
      << fixed(std::pow(10, x0), 3) << " to " << fixed(std::pow(10, x1), 3) << ")</text>";
    s << "<text x='14' y='" << (T + H - B) / 2
      << "' font-size='12' text-anchor='middle' transform='rotate(-90 14 " << (T + H - B) / 2
      << ")'>" << explore_metric_name(o_.metric) << " % (" << fixed(y0, 1) << " to " << fixed(y1, 1)
      << ")</text></svg>";
    return s.str();
  };
  std::ostringstream h;
  h << "<!doctype html><html><head><meta charset='utf-8'><title>dlas explore: "
    << html_escape(o_.model)
    << "</title><style>body{font-family:sans-serif;max-width:60em;margin:2em auto}"
    << "</style></head><body><h1>dlas explore: " << html_escape(o_.model) << "</h1>";
  const ExploreCandidate& rec = r_.candidates[static_cast<size_t>(r_.recommendation)];
  h << "<p>Recommendation: <b>" << html_escape(rec.label) << "</b>, " << fixed(rec.median_ms, 3)
    << " ms, " << fixed(100 * accuracy_of_candidate(r_.recommendation), 2) << "% "
    << explore_metric_name(o_.metric) << " (" << html_escape(current_host().cpu_model) << ", "
    << threads_ << " threads). Orange: the recommendation; green: the Pareto front; dashed: the "
    << "accuracy budget.</p>";
  h << "<h2>Accuracy against latency</h2>" << svg(lat, "median latency, ms");
  h << "<h2>Accuracy against weight size</h2>" << svg(size, "weights, KiB");
  h << "</body></html>\n";
  return h.str();
}

void Explorer::write_outputs() const {
  const fs::path dir(o_.out_dir);
  const ExploreCandidate& rec = r_.candidates[static_cast<size_t>(r_.recommendation)];
  write_file_atomic(dir / "best.onnx", read_file(rec.model_path));
  std::error_code ec;
  if (rec.schedule != "default")
    write_file_atomic(dir / "best.records.jsonl", read_file(records_path(rec)));
  else
    fs::remove(dir / "best.records.jsonl", ec);
  write_file_atomic(dir / "README.md", readme());
  write_file_atomic(dir / "report.html", html());
  write_file_atomic(dir / "explore.json", json());
}

}  // namespace dlas::study

// The study report: tables computed from the ok rows, figures drawn by gnuplot
// (figures.cc, plots.cc), written as Markdown, a self-contained HTML page and one CSV per
// table: the summary first, then the observations, the plots, and the tables.
#include "dlas/study/report.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <set>
#include <sstream>

#include "dlas/core/error.h"
#include "dlas/core/file.h"
#include "dlas/optimize/prune_sweep.h"
#include "study/analysis.h"
#include "study/figures.h"

extern char** environ;

namespace dlas::study {

namespace fs = std::filesystem;
using analysis::Context;
using analysis::fmt;

std::string table_csv(const Table& t) {
  auto quote = [](const std::string& s) {
    if (s.find_first_of(",\"\n\r") == std::string::npos) return s;
    std::string q = "\"";
    for (char c : s) q += c == '"' ? std::string("\"\"") : std::string(1, c);
    return q + "\"";
  };
  std::string out;
  auto line = [&](const std::vector<std::string>& cells) {
    for (size_t i = 0; i < cells.size(); ++i) {
      if (i) out += ',';
      out += quote(cells[i]);
    }
    out += "\r\n";
  };
  line(t.header);
  for (const auto& r : t.cells) line(r);
  return out;
}

std::string table_markdown(const Table& t) {
  auto esc = [](const std::string& s) {
    std::string o;
    for (char c : s) o += c == '|' ? std::string("\\|") : std::string(1, c);
    return o;
  };
  std::string out = "| ";
  for (size_t i = 0; i < t.header.size(); ++i) out += (i ? " | " : "") + esc(t.header[i]);
  out += " |\n|";
  for (size_t i = 0; i < t.header.size(); ++i) out += "---|";
  out += "\n";
  for (const auto& r : t.cells) {
    out += "| ";
    for (size_t i = 0; i < r.size(); ++i) out += (i ? " | " : "") + esc(r[i]);
    out += " |\n";
  }
  return out;
}

std::string html_escape(std::string_view s) {
  std::string o;
  for (char c : s) {
    if (c == '<')
      o += "&lt;";
    else if (c == '>')
      o += "&gt;";
    else if (c == '&')
      o += "&amp;";
    else if (c == '"')
      o += "&quot;";
    else
      o += c;
  }
  return o;
}

namespace {

const std::vector<std::string> kContextHeader = {"platform", "model", "batch", "opt"};

std::vector<std::string> context_cells(const Context& c) {
  return {analysis::platform_label(c), c.model, std::to_string(c.batch),
          std::to_string(c.opt_level)};
}

// A table whose rows start with the context columns, then `columns`.
Table context_table(const char* id, const char* title, const char* note,
                    std::initializer_list<const char*> columns) {
  Table t{id, title, note, kContextHeader, {}};
  for (const char* h : columns) t.header.push_back(h);
  return t;
}

// One column per value of one dimension (the compression when `per_compression`, else the
// algorithm): the fastest variant of the context with that value, named by the other
// dimension, and its median ms.
Table fastest_per_value(const std::vector<Context>& contexts, Table t, bool per_compression) {
  const auto value_of = [&](const std::pair<std::string, std::string>& k) -> const std::string& {
    return per_compression ? k.second : k.first;
  };
  std::set<std::string> values;
  for (const Context& c : contexts)
    for (const auto& [key, v] : c.variants) values.insert(value_of(key));
  for (const auto& value : values) t.header.push_back(value);
  for (const Context& c : contexts) {
    auto row = context_cells(c);
    for (const auto& value : values) {
      const analysis::Variant* best =
          c.fastest([&](const auto& k) { return value_of(k) == value; });
      const std::string other = best ? (per_compression ? best->algorithm : best->compress) : "";
      row.push_back(best ? other + " (" + fmt(best->median_ms, 3) + ")" : "-");
    }
    t.cells.push_back(row);
  }
  return t;
}

Table fastest_algorithm_table(const std::vector<Context>& contexts) {
  return fastest_per_value(
      contexts,
      context_table("fastest_algorithm", "Fastest algorithm per compression",
                    "For each context and compression, the algorithm with the lowest median "
                    "latency (its median in ms). '-' where the study has no ok variant.",
                    {}),
      true);
}

Table fastest_compression_table(const std::vector<Context>& contexts) {
  return fastest_per_value(
      contexts,
      context_table("fastest_compression", "Fastest compression per algorithm",
                    "For each context and algorithm, the compression with the lowest median "
                    "latency.",
                    {}),
      false);
}

Table overall_fastest_table(const std::vector<Context>& contexts) {
  Table t = context_table("overall_fastest", "Overall fastest variant per context",
                          "The fastest compression + algorithm; speedups are the slowest and the "
                          "median variant of the context divided by it.",
                          {"fastest", "median_ms", "variants", "x_slowest", "x_median"});
  for (const Context& c : contexts) {
    const analysis::Variant* best = c.fastest([](const auto&) { return true; });
    std::vector<double> ms;
    for (const auto& [k, v] : c.variants) ms.push_back(v.median_ms);
    std::sort(ms.begin(), ms.end());
    auto row = context_cells(c);
    row.insert(row.end(), {best->compress + "+" + best->algorithm, fmt(best->median_ms, 3),
                           std::to_string(ms.size()), fmt(ms.back() / best->median_ms, 2),
                           fmt(analysis::median(ms) / best->median_ms, 2)});
    t.cells.push_back(row);
  }
  return t;
}

Table latency_table(const std::vector<Context>& contexts) {
  Table t = context_table(
      "latency", "Latency of every variant",
      "Median, 10th and 90th percentile of the timed repeats (ms); the data of the latency plots.",
      {"algorithm", "compress", "median_ms", "p10_ms", "p90_ms", "cv", "params", "macs"});
  for (const Context& c : contexts)
    for (const auto& [k, v] : c.variants) {
      auto row = context_cells(c);
      row.insert(row.end(),
                 {v.algorithm, v.compress, fmt(v.median_ms, 4), fmt(v.p10_ms, 4), fmt(v.p90_ms, 4),
                  fmt(v.cv, 4), std::to_string(v.params), std::to_string(v.macs)});
      t.cells.push_back(row);
    }
  return t;
}

Table speedup_table(const std::vector<Context>& contexts) {
  Table t = context_table(
      "speedup", "Achieved vs expected speedup of compression",
      "Each compressed variant against the dense variant of the same context and algorithm. "
      "Expected: 1/(1-s) for weight and block pruning, the MAC ratio for channel pruning, 2x "
      "for fp16/bf16 and 4x for int8 (multiplied when composed).",
      {"algorithm", "compress", "dense_ms", "ms", "expected", "achieved", "pct_of_expected"});
  for (const analysis::Speedup& s : analysis::speedups(contexts)) {
    auto row = context_cells(*s.context);
    row.insert(row.end(),
               {s.algorithm, s.compress, fmt(s.dense_ms, 4), fmt(s.ms, 4), fmt(s.expected, 2),
                fmt(s.achieved, 2), fmt(100.0 * s.achieved / s.expected, 1)});
    t.cells.push_back(row);
  }
  if (t.cells.empty()) t.note += " This study has no compressed variant.";
  return t;
}

Table tuning_table(const std::vector<Context>& contexts) {
  Table t = context_table(
      "tuning", "Untuned vs auto-tuned",
      "Each tuned variant against its untuned twin (same platform, model, algorithm and "
      "compression; schedule default), and TVM tuned by MetaSchedule against TVM's default "
      "schedules. Tuning cost: the tuner's wall time and candidates measured (DLAS "
      "observations XI and XII; Trimmer's cost of tuning).",
      {"schedule", "algorithm", "compress", "untuned_ms", "tuned_ms", "speedup", "tuning_s",
       "trials"});
  std::map<std::string, const Context*> untuned;
  for (const Context& c : contexts)
    if (!analysis::is_tuned(c.schedule)) untuned[analysis::untuned_twin_key(c)] = &c;
  for (const Context& c : contexts) {
    if (!analysis::is_tuned(c.schedule)) continue;
    auto twin = untuned.find(analysis::untuned_twin_key(c));
    if (twin == untuned.end()) continue;
    for (const auto& [k, v] : c.variants) {
      auto u = twin->second->variants.find(k);
      if (u == twin->second->variants.end()) continue;
      auto row = context_cells(*twin->second);
      row.insert(row.end(), {c.schedule, v.algorithm, v.compress, fmt(u->second.median_ms, 4),
                             fmt(v.median_ms, 4), fmt(u->second.median_ms / v.median_ms, 2),
                             fmt(v.tuning_s, 1), std::to_string(v.tuning_trials)});
      t.cells.push_back(row);
    }
  }
  // TVM tuned by MetaSchedule (backend tvm-tuned) against TVM's default schedules (tvm):
  // the paper's own tuner, in the same table as dlas's. Peer rows join every dlas context
  // of their platform and model, so each pair is listed once.
  std::set<std::string> listed;
  for (const Context& c : contexts) {
    for (const auto& [k, v] : c.variants) {
      if (k.first != "tvm-tuned") continue;
      auto u = c.variants.find({"tvm", k.second});
      if (u == c.variants.end() || !listed.insert(v.variant_id).second) continue;
      auto row = context_cells(c);
      row.insert(row.end(), {str("metaschedule:", v.tuning_trials, "trials"), "tvm", v.compress,
                             fmt(u->second.median_ms, 4), fmt(v.median_ms, 4),
                             fmt(u->second.median_ms / v.median_ms, 2), fmt(v.tuning_s, 1),
                             std::to_string(v.tuning_trials)});
      t.cells.push_back(row);
    }
  }
  if (t.cells.empty()) t.note += " This study has no tuned variant with an untuned twin.";
  return t;
}

// Each variant under every activation layout of the study, side by side: contexts that
// differ only in layout are grouped, and each dlas (algorithm, compression) measured in two
// layouts or more is a row, then the fastest variant of each layout when there are several.
Table layouts_table(const std::vector<Context>& contexts) {
  const std::vector<std::string> layouts = analysis::layouts_of(contexts);
  const bool have_nchw = !layouts.empty() && layouts[0] == "nchw";
  Table t = context_table(
      "layouts", "Data layouts",
      "Median latency (ms) of each variant under each activation layout of the study: nchw "
      "plain, nchwc the ISA's blocked layout (nchw16c on AVX-512, nchw8c on AVX2, with "
      "reorders where a layer has no blocked kernel), auto blocked only where the layout rule "
      "expects it to win. X_vs_nchw: the NCHW median divided by layout X's (above 1: X is "
      "faster). 'fastest': each layout's fastest variant. oneDNN rows are left out (it picks "
      "its own layouts).",
      {"algorithm", "compress"});
  for (const std::string& l : layouts) t.header.push_back(l + "_ms");
  if (have_nchw)
    for (size_t i = 1; i < layouts.size(); ++i) t.header.push_back(layouts[i] + "_vs_nchw");
  // Contexts that differ only in layout, in context order.
  std::vector<std::string> order;
  std::map<std::string, std::map<std::string, const Context*>> groups;
  for (const Context& c : contexts) {
    const std::string key = c.platform + "|" + c.model + "|" + std::to_string(c.batch) + "|" +
                            std::to_string(c.opt_level);
    if (!groups.count(key)) order.push_back(key);
    groups[key][c.layout] = &c;
  }
  using Key = std::pair<std::string, std::string>;
  const auto dlas_only = [](const Context& c, const std::function<bool(const Key&)>& pred) {
    return c.fastest([&](const Key& k) { return pred(k) && !c.variants.at(k).vendor; });
  };
  for (const std::string& key : order) {
    const auto& group = groups.at(key);
    if (group.size() < 2) continue;
    const Context& first = *group.begin()->second;
    // One row: the variant `pred` picks in each layout's context.
    auto add_row = [&](const std::string& algorithm, const std::string& compress,
                       const std::function<bool(const Key&)>& pred) {
      std::vector<double> ms;
      int measured = 0;
      for (const std::string& l : layouts) {
        const auto it = group.find(l);
        const analysis::Variant* v = it == group.end() ? nullptr : dlas_only(*it->second, pred);
        ms.push_back(v ? v->median_ms : 0);
        measured += v ? 1 : 0;
      }
      if (measured < 2) return;
      std::vector<std::string> row = {
          first.platform, first.model, std::to_string(first.batch), std::to_string(first.opt_level),
          algorithm,      compress};
      for (double m : ms) row.push_back(m > 0 ? fmt(m, 4) : "-");
      if (have_nchw)
        for (size_t i = 1; i < ms.size(); ++i)
          row.push_back(ms[0] > 0 && ms[i] > 0 ? fmt(ms[0] / ms[i], 2) : "-");
      t.cells.push_back(row);
    };
    std::set<Key> keys;
    for (const auto& [layout, c] : group)
      for (const auto& [k, v] : c->variants)
        if (!v.vendor) keys.insert(k);
    for (const Key& k : keys) add_row(k.first, k.second, [&](const Key& x) { return x == k; });
    if (keys.size() > 1) add_row("fastest", "any", [](const Key&) { return true; });
  }
  if (t.cells.empty())
    t.note += " No variant was measured in two layouts with the rest of its context the same.";
  return t;
}

Table correlation_table(const std::vector<Context>& contexts) {
  Table t{"correlation",
          "Correlation of model size, MACs, accuracy and latency",
          "Per platform, over models (dense, each model's fastest variant): Spearman rank "
          "and Pearson correlation. Observation I of the paper: not strongly correlated.",
          {"platform", "x", "y", "models", "spearman", "pearson"},
          {}};
  for (const analysis::Correlation& c : analysis::correlations(contexts))
    t.cells.push_back(
        {c.platform, c.x, c.y, std::to_string(c.n), fmt(c.spearman, 3), fmt(c.pearson, 3)});
  return t;
}

}  // namespace

std::vector<Table> report_tables(const std::vector<Row>& all) {
  const std::vector<Context> contexts = analysis::contexts_of(all);
  // The report's tables, in report order (report.h lists them).
  using Builder = Table (*)(const std::vector<Context>&);
  static const Builder kTables[] = {fastest_algorithm_table, fastest_compression_table,
                                    overall_fastest_table,   latency_table,
                                    speedup_table,           tuning_table,
                                    correlation_table,       analysis::accuracy_summary_of};
  std::vector<Table> tables = {analysis::summary_of(all)};
  for (Builder build : kTables) tables.push_back(build(contexts));
  // A study with several activation layouts compares them (after the tuning table).
  if (analysis::layouts_of(contexts).size() > 1) {
    const auto at =
        std::find_if(tables.begin(), tables.end(), [](const Table& t) { return t.id == "tuning"; });
    tables.insert(at == tables.end() ? tables.end() : std::next(at), layouts_table(contexts));
  }
  return tables;
}

namespace {

// Bits a parameter is stored in under a compression spec (int8 8, fp16/bf16 16, else 32).
int storage_bits(const std::string& compress) {
  if (compress.find("int8") != std::string::npos) return 8;
  if (compress.find("fp16") != std::string::npos || compress.find("bf16") != std::string::npos)
    return 16;
  return 32;
}

}  // namespace

Table analysis::accuracy_summary_of(const std::vector<Context>& contexts) {
  Table t{"accuracy_summary",
          "Accuracy and latency per compression (the paper's Tables 2 and 5)",
          "Per context with measured accuracy (a model built for a dataset) and compression: "
          "the fastest variant, its parameters (nonzero: pruning leaves zeros), MACs, top-1 and "
          "top-5 on the test images (%), the top-1 loss against dense (points), the "
          "compression ratio (dense parameter bits / nonzero parameter bits: 32-bit floats, "
          "8 bits for int8, 16 for fp16/bf16), its median latency (ms) and speedup over the "
          "fastest dense variant.",
          {"platform", "model", "dataset", "batch", "compress", "algorithm", "params",
           "nonzero_params", "macs", "top1", "top5", "top1_loss", "ratio", "median_ms", "speedup"},
          {}};
  for (const Context& c : contexts) {
    std::set<std::string> comps;
    for (const auto& [k, v] : c.variants)
      if (v.has_accuracy) comps.insert(k.second);
    if (comps.empty()) continue;
    const analysis::Variant* dense = c.fastest([](const auto& k) { return k.second == "dense"; });
    // Dense first, then the spec order of the set.
    std::vector<std::string> order;
    if (comps.count("dense")) order.push_back("dense");
    for (const auto& x : comps)
      if (x != "dense") order.push_back(x);
    const std::string name = c.dataset.empty() ? c.model : c.model.substr(0, c.model.find(" @"));
    for (const std::string& comp : order) {
      const analysis::Variant* v = c.fastest([&](const auto& k) { return k.second == comp; });
      if (!v || !v->has_accuracy) continue;
      const bool dense_acc = dense && dense->has_accuracy;
      const double ratio = dense && v->nonzero_params > 0
                               ? 32.0 * static_cast<double>(dense->nonzero_params) /
                                     (storage_bits(comp) * static_cast<double>(v->nonzero_params))
                               : 0.0;
      t.cells.push_back({c.platform, name, c.dataset, std::to_string(c.batch), comp, v->algorithm,
                         std::to_string(v->params), std::to_string(v->nonzero_params),
                         std::to_string(v->macs), fmt(100 * v->accuracy, 2),
                         v->top5 >= 0 ? fmt(100 * v->top5, 2) : "-",
                         dense_acc ? fmt(100 * (dense->accuracy - v->accuracy), 2) : "-",
                         ratio > 0 ? fmt(ratio, 2) : "-", fmt(v->median_ms, 4),
                         dense ? fmt(dense->median_ms / v->median_ms, 2) : "-"});
    }
  }
  if (t.cells.empty())
    t.note += " This study measured no accuracy (list [space].dataset in its spec).";
  return t;
}

Table accuracy_curves(const std::vector<SweepResult>& sweeps) {
  Table t{"accuracy_curves",
          "Accuracy vs compression, iterative pruning with fine-tuning (the paper's Fig. 3)",
          "From the prune-sweep folders: per model, dataset and method, each level's top-1 "
          "(%) after its fine-tuning and right after pruning, the sparsity achieved, "
          "parameters and MACs of the deployed graph; elbow = the highest level within the "
          "sweep's tolerance of the baseline (the level `elbow` in a spec deploys).",
          {"model", "dataset", "method", "level", "spec", "achieved", "top1", "top1_pruned", "top5",
           "params", "nonzero_params", "macs", "elbow"},
          {}};
  auto pct = [](double x) { return x < 0 ? std::string("-") : fmt(100 * x, 2); };
  for (const SweepResult& s : sweeps) {
    const std::string method = sweep_method_name(s.method);
    auto add = [&](const SweepPoint& p, bool elbow) {
      t.cells.push_back({s.model, s.dataset, method, fmt(p.level, 2), p.spec, fmt(p.achieved, 3),
                         pct(p.top1), pct(p.top1_pruned), pct(p.top5), std::to_string(p.params),
                         std::to_string(p.nonzero_params), std::to_string(p.macs),
                         elbow ? "elbow" : ""});
    };
    add(s.baseline, false);
    for (size_t i = 0; i < s.points.size(); ++i) add(s.points[i], static_cast<int>(i) == s.elbow);
  }
  if (t.cells.empty()) t.note += " No prune-sweep given (--sweep DIR or --spec).";
  return t;
}

namespace {

std::string read_text(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::ostringstream s;
  s << f.rdbuf();
  return s.str();
}

// Writes `text` to dir/name through a temporary file and a rename.
void write_atomic(const fs::path& dir, const std::string& name, const std::string& text) {
  write_file_atomic(dir / name, text);
}
// Runs gnuplot on `script` (stdin closed, stderr captured); throws kRuntime on failure.
void run_gnuplot(const fs::path& dir, const std::string& script) {
  const fs::path sp = dir / ".plot.gp", ep = dir / ".plot.err";
  write_atomic(dir, ".plot.gp", script);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&fa, 2, ep.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  std::string arg0 = "gnuplot", arg1 = sp.string();
  char* argv[] = {arg0.data(), arg1.data(), nullptr};
  pid_t pid = 0;
  const int rc = posix_spawnp(&pid, "gnuplot", &fa, nullptr, argv, environ);
  posix_spawn_file_actions_destroy(&fa);
  int status = 0;
  if (rc == 0) waitpid(pid, &status, 0);
  const std::string err = read_text(ep);
  std::error_code ec;
  fs::remove(sp, ec);
  fs::remove(ep, ec);
  DLAS_CHECK(rc == 0, ErrorKind::kRuntime,
             "report: cannot run gnuplot (install it: apt-get install gnuplot-nox), or use "
             "--no-plots");
  DLAS_CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, ErrorKind::kRuntime,
             "report: gnuplot failed: ", err.substr(0, 400));
}

// A figure's inline SVG: gnuplot's document without its XML prologue, its ids prefixed with
// the figure's name (several SVGs share one page, and gnuplot names its markers alike).
std::string inline_svg(const fs::path& file, const std::string& prefix) {
  std::string svg = read_text(file);
  const size_t at = svg.find("<svg");
  if (at != std::string::npos) svg = svg.substr(at);
  std::string out;
  out.reserve(svg.size() + 1024);
  for (size_t i = 0; i < svg.size();) {
    bool done = false;
    for (const char* key : {"id='", "id=\"", "href='#", "href=\"#", "url(#"}) {
      const size_t n = std::char_traits<char>::length(key);
      if (svg.compare(i, n, key) == 0 && (key[0] != 'i' || i == 0 || svg[i - 1] == ' ')) {
        out.append(key, n);
        out += prefix + "-";
        i += n;
        done = true;
        break;
      }
    }
    if (!done) out += svg[i++];
  }
  return out;
}

// report.md and report.html, built section by section: title, summary, observations, plots,
// then the tables (collapsed in the HTML).
struct Pages {
  std::ostringstream md, html;

  Pages(const std::string& title, const std::vector<Row>& rows, size_t contexts) {
    size_t ok = 0, other = 0;
    std::set<std::string> cpus;
    for (const Row& r : rows) {
      (r.text("status") == kStatusOk ? ok : other)++;
      if (r.text("status") != kStatusOk) continue;
      const std::string device = analysis::device_of(r);
      if (device != "cpu")
        cpus.insert(device + (r.text("gpu").empty() ? "" : " (" + r.text("gpu") + ")"));
      else if (!r.text("cpu_model").empty())
        cpus.insert(r.text("cpu_model"));
    }
    std::string cpu;
    for (const std::string& c : cpus) cpu += (cpu.empty() ? "" : ", ") + c;
    const std::string intro =
        std::to_string(ok) + " ok variants (" + std::to_string(other) + " not ok) in " +
        std::to_string(contexts) + " contexts" + (cpu.empty() ? "" : " on " + cpu) +
        ". A context is one platform (CPU / ISA path / threads / schedule, then the activation "
        "layout when not auto; or GPU / device / schedule), model, batch and graph-optimization "
        "level; within it variants "
        "differ in algorithm and compression. Latencies are medians of the timed repeats, in "
        "ms.";
    md << "# " << title << "\n\n" << intro << "\n\n";
    html << "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>" << html_escape(title)
         << "</title>\n<style>body{font-family:sans-serif;max-width:1240px;margin:2em auto;"
            "padding:0 1em;color:#222;}"
            "table{border-collapse:collapse;margin:0.5em 0 1em;font-size:90%;}"
            "td,th{border:1px solid #bbb;padding:3px 8px;text-align:left;vertical-align:top;}"
            "th{background:#eee;}.holds{color:#060;font-weight:bold;}"
            ".fails{color:#a00;font-weight:bold;}.mixed{color:#a60;font-weight:bold;}"
            ".untestable{color:#777;}.note{color:#555;max-width:60em;}"
            "figure{margin:1em 0 2em;}figcaption{color:#444;max-width:60em;margin-top:0.3em;}"
            "figure svg{max-width:100%;height:auto;display:block;}"
            "details{margin:0.4em 0;}summary{cursor:pointer;font-weight:bold;}"
            "nav a{margin-right:1em;}</style></head><body>\n<h1>"
         << html_escape(title) << "</h1>\n<p>" << html_escape(intro) << "</p>\n"
         << "<nav><a href=\"#summary\">Summary</a><a href=\"#observations\">Observations</a>"
            "<a href=\"#plots\">Plots</a><a href=\"#tables\">Tables</a></nav>\n";
  }

  void html_table(const std::vector<std::string>& header,
                  const std::vector<std::vector<std::string>>& cells, int verdict_col = -1) {
    html << "<table><tr>";
    for (const auto& h : header) html << "<th>" << html_escape(h) << "</th>";
    html << "</tr>\n";
    for (const auto& r : cells) {
      html << "<tr>";
      for (size_t i = 0; i < r.size(); ++i) {
        if (static_cast<int>(i) == verdict_col)
          html << "<td class=\"" << (r[i] == "not testable" ? "untestable" : html_escape(r[i]))
               << "\">";
        else
          html << "<td>";
        html << html_escape(r[i]) << "</td>";
      }
      html << "</tr>\n";
    }
    html << "</table>\n";
  }

  // An open section: heading (with an anchor), note, table.
  void section(const std::string& anchor, const Table& t, int verdict_col = -1) {
    md << "## " << t.title << "\n\n";
    if (!t.note.empty()) md << t.note << "\n\n";
    md << table_markdown(t) << "\n";
    html << "<h2 id=\"" << anchor << "\">" << html_escape(t.title) << "</h2>\n";
    if (!t.note.empty()) html << "<p class=\"note\">" << html_escape(t.note) << "</p>\n";
    html_table(t.header, t.cells, verdict_col);
  }

  // A table at the end: collapsed in the HTML, with its CSV linked.
  void detail_table(const Table& t) {
    md << "### " << t.title << "\n\n";
    if (!t.note.empty()) md << t.note << "\n\n";
    md << table_markdown(t) << "\nCSV: [" << t.id << ".csv](" << t.id << ".csv)\n\n";
    html << "<details id=\"table-" << html_escape(t.id) << "\"><summary>" << html_escape(t.title)
         << " (" << t.cells.size() << " rows)</summary>\n";
    if (!t.note.empty()) html << "<p class=\"note\">" << html_escape(t.note) << "</p>\n";
    html_table(t.header, t.cells);
    html << "<p><a href=\"" << html_escape(t.id) << ".csv\">" << html_escape(t.id)
         << ".csv</a></p></details>\n";
  }

  // The plots: PNG images in the Markdown; the SVGs inlined in the HTML (self-contained),
  // each with links to its files.
  void plots(const fs::path& dir, const std::vector<plots::Figure>& figs) {
    md << "## Plots\n\n";
    html << "<h2 id=\"plots\">Plots</h2>\n";
    if (figs.empty()) {
      md << "No plots (--no-plots, or nothing to draw).\n\n";
      html << "<p class=\"note\">No plots (--no-plots, or nothing to draw).</p>\n";
      return;
    }
    for (const plots::Figure& f : figs) {
      md << "### " << f.title << "\n\n"
         << f.caption << "\n\n![" << f.title << "](" << f.name << ".png)\n\n";
      html << "<figure id=\"fig-" << html_escape(f.name) << "\"><h3>" << html_escape(f.title)
           << "</h3>\n"
           << inline_svg(dir / (f.name + ".svg"), f.name) << "\n<figcaption>"
           << html_escape(f.caption) << " Files: <a href=\"" << html_escape(f.name) << ".svg\">"
           << html_escape(f.name) << ".svg</a>, <a href=\"" << html_escape(f.name) << ".png\">"
           << html_escape(f.name) << ".png</a>.</figcaption></figure>\n";
    }
  }
};

Table observations_table(const std::vector<Observation>& obs) {
  Table ot{"observations",
           "The paper's observations on this data",
           "Each of the DLAS paper's 13 observations checked on these rows: holds, fails, "
           "mixed, or not testable (and what to add to the study's [space] to test it).",
           {"id", "claim", "verdict", "detail"},
           {}};
  for (const Observation& o : obs) ot.cells.push_back({o.id, o.claim, o.verdict, o.detail});
  return ot;
}

}  // namespace

ReportFiles write_report(const std::vector<Row>& rows, const std::string& dir_name,
                         const ReportOptions& options) {
  const std::vector<Context> contexts = analysis::contexts_of(rows);
  DLAS_CHECK(!contexts.empty(), ErrorKind::kInvalidInput,
             "report: the database has no ok row to report on");
  const fs::path dir(dir_name);
  std::error_code ec;
  fs::create_directories(dir, ec);
  DLAS_CHECK(!ec && fs::is_directory(dir), ErrorKind::kInvalidInput, "report: cannot create ",
             dir_name, ec ? ": " + ec.message() : std::string());
  ReportFiles out;
  std::vector<Table> tables = report_tables(rows);
  if (!options.sweeps.empty()) tables.push_back(accuracy_curves(options.sweeps));
  const std::vector<Observation> obs = observe(rows);

  std::vector<plots::Figure> figs;
  if (options.plots) {
    figs = report_figures(contexts, options.sweeps);
    std::string script;
    for (const plots::Figure& f : figs)
      script += plots::both_terminals(f, temp_path_for(dir / (f.name + ".svg")).string(),
                                      temp_path_for(dir / (f.name + ".png")).string());
    if (!figs.empty()) run_gnuplot(dir, script);
    for (const plots::Figure& f : figs)
      for (const char* ext : {".svg", ".png"}) {
        commit_temp_file(temp_path_for(dir / (f.name + ext)), dir / (f.name + ext));
        out.files.push_back(f.name + ext);
      }
    out.plots = static_cast<int>(figs.size());
  }

  // Markdown and HTML: the summary (the first table) first, then the observations, the
  // plots and the other tables.
  Pages pages(options.title, rows, contexts.size());
  pages.section("summary", tables.front());
  const Table ot = observations_table(obs);
  pages.section("observations", ot, /*verdict_col=*/2);
  pages.plots(dir, figs);
  pages.md << "## Tables\n\nEvery table is also a CSV file in this folder.\n\n";
  pages.html << "<h2 id=\"tables\">Tables</h2>\n<p class=\"note\">Every table is also a CSV "
                "file in this folder; click a title to open it.</p>\n";
  for (const Table& t : tables) {
    if (&t != &tables.front()) pages.detail_table(t);
    write_atomic(dir, t.id + ".csv", table_csv(t));
    out.files.push_back(t.id + ".csv");
    ++out.tables;
  }
  write_atomic(dir, "observations.csv", table_csv(ot));
  out.files.push_back("observations.csv");
  pages.html << "</body></html>\n";
  write_atomic(dir, "report.md", pages.md.str());
  write_atomic(dir, "report.html", pages.html.str());
  out.files.push_back("report.md");
  out.files.push_back("report.html");
  return out;
}

}  // namespace dlas::study

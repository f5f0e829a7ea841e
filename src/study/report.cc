// The study report: tables computed from the ok rows, plots drawn by gnuplot, written
// as Markdown, a self-contained HTML page and one CSV per table.
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
    for (size_t i = 0; i < cells.size(); ++i) out += (i ? "," : "") + quote(cells[i]);
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
      "compression; schedule default). Tuning cost: the tuner's wall time and candidates "
      "measured (DLAS observations XI and XII; Trimmer's cost of tuning).",
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
  std::vector<Table> tables;
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

std::string gp_quote(const std::string& s) {
  std::string o = "\"";
  for (char c : s) o += (c == '"' || c == '\\') ? std::string("\\") + c : std::string(1, c);
  return o + "\"";
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

struct Plot {
  std::string name, title;  // files name.svg / name.png
};

// gnuplot script lines that draw one plot to name.svg and name.png from datablock $D.
std::string both_terminals(const fs::path& dir, const std::string& name, const std::string& draw,
                           int w, int h) {
  std::ostringstream s;
  s << "set terminal svg size " << w << "," << h << " dynamic font 'sans,11'\n"
    << "set output " << gp_quote(temp_path_for(dir / (name + ".svg")).string()) << "\n"
    << draw << "set terminal pngcairo size " << w << "," << h << " font 'sans,10'\n"
    << "set output " << gp_quote(temp_path_for(dir / (name + ".png")).string()) << "\n"
    << "replot\nunset output\n";
  return s.str();
}

// A plot's script (drawing both files) is appended to `script` and the plot to `plots`.
struct PlotList {
  const fs::path& dir;
  std::string script;
  std::vector<Plot> plots;

  void add(const std::string& name, const std::string& title, const std::string& draw, int w,
           int h) {
    script += both_terminals(dir, name, draw, w, h);
    plots.push_back({name, title});
  }
};

// Latency bars per model grouped by variant (log scale: models differ by 100x).
void add_latency_plot(PlotList& pl, const std::string& platform,
                      const std::vector<const Context*>& ctxs) {
  std::set<std::string> series;
  for (const Context* c : ctxs)
    for (const auto& [k, v] : c->variants) series.insert(k.second + "+" + k.first);
  std::ostringstream d;
  d << "$D << EOD\nmodel";
  for (const auto& s : series) d << " " << gp_quote(s);
  d << "\n";
  for (const Context* c : ctxs) {
    d << gp_quote(c->model + (c->batch > 1 ? " b" + std::to_string(c->batch) : "") +
                  (c->opt_level != 3 ? " O" + std::to_string(c->opt_level) : "") +
                  (c->layout != "auto" ? " " + c->layout : ""));
    for (const auto& s : series) {
      const size_t plus = s.find('+');
      auto it = c->variants.find({s.substr(plus + 1), s.substr(0, plus)});
      d << " " << (it == c->variants.end() ? std::string("NaN") : fmt(it->second.median_ms, 5));
    }
    d << "\n";
  }
  d << "EOD\n";
  std::ostringstream draw;
  draw << d.str() << "reset\nset title " << gp_quote("Latency, " + platform)
       << "\nset style data histogram\nset style histogram clustered gap 1\n"
       << "set style fill solid 0.85 border -1\nset logscale y\n"
       << "set ylabel 'median latency (ms, log scale)'\nset key outside right top\n"
       << "set xtics rotate by -30\nset grid ytics\n"
       << "plot for [i=2:" << series.size() + 1 << "] $D using i:xtic(1) title columnhead\n";
  pl.add("latency-" + slug(platform), "Latency per model and variant, " + platform, draw.str(), 960,
         480);
}

// MACs vs the fastest dense latency of each model (observation I); none without MACs.
void add_macs_plot(PlotList& pl, const std::string& platform,
                   const std::vector<const Context*>& ctxs) {
  std::ostringstream m;
  m << "$M << EOD\n";
  int points = 0;
  for (const Context* c : ctxs) {
    const analysis::Variant* best = c->fastest([](const auto& k) { return k.second == "dense"; });
    if (!best || best->macs <= 0) continue;
    m << best->macs << " " << fmt(best->median_ms, 5) << " " << gp_quote(c->model) << "\n";
    ++points;
  }
  m << "EOD\n";
  if (points == 0) return;
  std::ostringstream md;
  md << m.str() << "reset\nset title " << gp_quote("MACs vs latency, " + platform)
     << "\nset logscale xy\nset xlabel 'MACs per inference'\n"
     << "set ylabel 'fastest dense median latency (ms)'\nset grid\nunset key\n"
     << "plot $M using 1:2 with points pt 7 ps 1.2, '' using 1:2:3 with labels offset "
        "char 0,1 font ',9'\n";
  pl.add("macs-latency-" + slug(platform),
         "MACs vs fastest dense latency (observation I), " + platform, md.str(), 720, 480);
}

// Achieved vs expected speedup of every compressed variant; none without one.
void add_speedup_plot(PlotList& pl, const std::vector<Context>& contexts) {
  const std::vector<analysis::Speedup> sps = analysis::speedups(contexts);
  if (sps.empty()) return;
  std::ostringstream d;
  d << "$S << EOD\nvariant expected achieved\n";
  for (const auto& s : sps)
    d << gp_quote(s.context->model + " " + s.compress + " " + s.algorithm) << " "
      << fmt(s.expected, 4) << " " << fmt(s.achieved, 4) << "\n";
  d << "EOD\nreset\nset title 'Achieved vs expected speedup of compression'\n"
    << "set style data histogram\nset style histogram clustered gap 1\n"
    << "set style fill solid 0.85 border -1\nset ylabel 'speedup over dense (x)'\n"
    << "set xtics rotate by -45 font ',8'\nset grid ytics\nset key top left\n"
    << "plot $S using 2:xtic(1) title 'expected', '' using 3 title 'achieved'\n";
  pl.add("speedup", "Achieved vs expected speedup of compression", d.str(), 1100, 520);
}

// Fig. 3: top-1 vs fraction pruned of one model and dataset, a line per method.
void add_accuracy_plot(PlotList& pl, const std::pair<std::string, std::string>& key,
                       const std::vector<const SweepResult*>& list) {
  std::ostringstream d, draw;
  std::string plot_cmd;
  int block = 0;
  for (const SweepResult* s : list) {
    d << "$C" << block << " << EOD\n"
      << fmt(0.0, 3) << " " << fmt(100 * s->baseline.top1, 3) << "\n";
    for (const SweepPoint& p : s->points)
      if (p.top1 >= 0) d << fmt(p.level, 3) << " " << fmt(100 * p.top1, 3) << "\n";
    d << "EOD\n";
    plot_cmd += str(block ? ", " : "", "$C", block, " using 1:2 with linespoints pt 7 title ",
                    gp_quote(sweep_method_name(s->method)));
    if (s->elbow >= 0) {
      const SweepPoint& e = s->points[static_cast<size_t>(s->elbow)];
      d << "$E" << block << " << EOD\n"
        << fmt(e.level, 3) << " " << fmt(100 * e.top1, 3) << "\nEOD\n";
      plot_cmd += str(", $E", block, " using 1:2 with points pt 6 ps 2.5 title ",
                      gp_quote(std::string(sweep_method_name(s->method)) + " elbow"));
    }
    ++block;
  }
  const std::string title = key.first + (key.second.empty() ? "" : " on " + key.second);
  draw << d.str() << "reset\nset title " << gp_quote("Top-1 vs compression, " + title)
       << "\nset xlabel 'fraction pruned'\nset ylabel 'top-1 (%)'\nset grid\n"
       << "set key bottom left\nset xrange [0:1]\nplot " << plot_cmd << "\n";
  pl.add("accuracy-" + slug(title), "Accuracy vs compression (Fig. 3), " + title, draw.str(), 720,
         480);
}

// Every plot of the report: per platform, latency bars and MACs vs latency; the speedups
// of compression; one accuracy curve per swept model and dataset.
PlotList report_plots(const fs::path& dir, const std::vector<Context>& contexts,
                      const std::vector<SweepResult>& sweeps) {
  PlotList pl{dir, {}, {}};
  std::map<std::string, std::vector<const Context*>> by_platform;
  for (const Context& c : contexts) by_platform[c.platform].push_back(&c);
  for (const auto& [platform, ctxs] : by_platform) {
    add_latency_plot(pl, platform, ctxs);
    add_macs_plot(pl, platform, ctxs);
  }
  add_speedup_plot(pl, contexts);
  std::map<std::pair<std::string, std::string>, std::vector<const SweepResult*>> curves;
  for (const SweepResult& s : sweeps) curves[{s.model, s.dataset}].push_back(&s);
  for (const auto& [key, list] : curves) add_accuracy_plot(pl, key, list);
  return pl;
}

std::string html_esc(const std::string& s) {
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

// report.md and report.html, built section by section.
struct Pages {
  std::ostringstream md, html;

  Pages(const std::string& title, const std::vector<Row>& rows, size_t contexts) {
    size_t ok = 0, other = 0;
    for (const Row& r : rows) (r.text("status") == kStatusOk ? ok : other)++;
    md << "# " << title << "\n\n"
       << ok << " ok variants (" << other << " not ok) in " << contexts
       << " contexts. A context is one platform (CPU / ISA path / threads / schedule, then "
          "the activation layout when not auto), model, batch and graph-optimization level; "
          "within it variants differ in algorithm and compression. Latencies are medians of "
          "the timed repeats, in ms.\n\n";
    html << "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>" << html_esc(title)
         << "</title>\n<style>body{font-family:sans-serif;max-width:1200px;margin:2em auto;}"
            "table{border-collapse:collapse;margin:1em 0;font-size:90%;}"
            "td,th{border:1px solid #bbb;padding:3px 8px;text-align:left;}"
            "th{background:#eee;}.holds{color:#060;}.fails{color:#a00;}"
            ".note{color:#555;}</style></head><body>\n<h1>"
         << html_esc(title) << "</h1>\n<p>" << ok << " ok variants (" << other << " not ok) in "
         << contexts << " contexts (platform, model, batch, opt level). Latencies: medians in "
         << "ms.</p>\n";
  }

  void html_table(const std::vector<std::string>& header,
                  const std::vector<std::vector<std::string>>& cells) {
    html << "<table><tr>";
    for (const auto& h : header) html << "<th>" << html_esc(h) << "</th>";
    html << "</tr>\n";
    for (const auto& r : cells) {
      html << "<tr>";
      for (const auto& c : r) html << "<td>" << html_esc(c) << "</td>";
      html << "</tr>\n";
    }
    html << "</table>\n";
  }

  // A table's section; `csv_link`: the Markdown links its CSV file.
  void table(const Table& t, bool csv_link) {
    md << "## " << t.title << "\n\n";
    if (!t.note.empty()) md << t.note << "\n\n";
    md << table_markdown(t);
    if (csv_link)
      md << "\nCSV: [" << t.id << ".csv](" << t.id << ".csv)\n\n";
    else
      md << "\n";
    html << "<h2>" << html_esc(t.title) << "</h2>\n";
    if (!t.note.empty()) html << "<p class=\"note\">" << html_esc(t.note) << "</p>\n";
    html_table(t.header, t.cells);
  }

  // The plots: PNG links in the Markdown, the SVGs inlined in the HTML (self-contained).
  void plots(const fs::path& dir, const std::vector<Plot>& plots) {
    if (plots.empty()) return;
    md << "## Plots\n\n";
    html << "<h2>Plots</h2>\n";
    for (const Plot& p : plots) {
      md << "### " << p.title << "\n\n![" << p.title << "](" << p.name << ".png)\n\n";
      std::string svg = read_text(dir / (p.name + ".svg"));
      const size_t at = svg.find("<svg");
      if (at != std::string::npos) svg = svg.substr(at);
      html << "<h3>" << html_esc(p.title) << "</h3>\n" << svg << "\n";
    }
  }
};

Table observations_table(const std::vector<Observation>& obs) {
  Table ot{"observations",
           "The paper's observations on this data",
           "",
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

  std::vector<Plot> plots;
  if (options.plots) {
    PlotList pl = report_plots(dir, contexts, options.sweeps);
    const std::string& script = pl.script;
    plots = std::move(pl.plots);
    run_gnuplot(dir, script);
    for (const Plot& p : plots)
      for (const char* ext : {".svg", ".png"}) {
        commit_temp_file(temp_path_for(dir / (p.name + ext)), dir / (p.name + ext));
        out.files.push_back(p.name + ext);
      }
    out.plots = static_cast<int>(plots.size());
  }

  // Markdown and HTML.
  Pages pages(options.title, rows, contexts.size());
  for (const Table& t : tables) {
    pages.table(t, /*csv_link=*/true);
    write_atomic(dir, t.id + ".csv", table_csv(t));
    out.files.push_back(t.id + ".csv");
    ++out.tables;
  }
  const Table ot = observations_table(obs);
  pages.table(ot, /*csv_link=*/false);
  write_atomic(dir, "observations.csv", table_csv(ot));
  out.files.push_back("observations.csv");
  pages.plots(dir, plots);
  std::ostringstream &md = pages.md, &html = pages.html;
  html << "</body></html>\n";
  write_atomic(dir, "report.md", md.str());
  write_atomic(dir, "report.html", html.str());
  out.files.push_back("report.md");
  out.files.push_back("report.html");
  return out;
}

}  // namespace dlas::study

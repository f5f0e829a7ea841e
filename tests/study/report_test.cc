// The study report and the observations check on fixture rows: every table's numbers
// checked against the rows they come from, the files written, and observations that
// hold on one fixture and fail on another.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "dlas/core/error.h"
#include "dlas/study/report.h"
#include "dlas/study/spec.h"
#include "dlas/study/store.h"

namespace dlas::study {
namespace {

namespace fs = std::filesystem;

Row make_row(const std::string& model, const std::string& algo, const std::string& compress,
             double median, int64_t macs, int64_t params, const std::string& isa = "avx2",
             int threads = 2, const std::string& backend = "dlas",
             const std::string& schedule = "default") {
  Row r;
  r.set("variant_id", "model=" + model + ";algo=" + algo + ";compress=" + compress + ";isa=" + isa +
                          ";threads=" + std::to_string(threads) + ";" + schedule);
  r.set("hardware_id", std::string("hw0"));
  r.set("status", std::string(kStatusOk));
  r.set("model", model);
  r.set("batch", int64_t{1});
  r.set("compress", compress);
  r.set("backend", backend);
  r.set("conv_algo", backend == "dlas" ? algo : backend);
  r.set("schedule", schedule);
  r.set("opt_level", int64_t{3});
  r.set("isa", backend == "dlas" ? isa : backend);
  r.set("detected_isa", std::string("avx2"));
  r.set("isa_emulated", int64_t{isa == "scalar" ? 1 : 0});
  r.set("threads", int64_t{threads});
  r.set("cpu_model", std::string("Test CPU"));
  r.set("median_ms", median);
  r.set("p10_ms", median * 0.9);
  r.set("p90_ms", median * 1.1);
  r.set("cv", 0.01);
  r.set("macs", macs);
  r.set("params", params);
  return r;
}

// Three models x three algorithms, dense, plus a failed row that must be ignored.
std::vector<Row> fixture() {
  std::vector<Row> rows;
  const struct {
    const char* model;
    int64_t macs, params;
    double direct, gemm, spack;
  } models[] = {{"small", 1000, 10, 3.0, 2.0, 1.0},
                {"medium", 5000, 300, 9.0, 8.0, 7.0},
                {"large", 20000, 50, 20.0, 30.0, 25.0}};
  for (const auto& m : models) {
    rows.push_back(make_row(m.model, "direct", "dense", m.direct, m.macs, m.params));
    rows.push_back(make_row(m.model, "gemm", "dense", m.gemm, m.macs, m.params));
    rows.push_back(make_row(m.model, "spatial-pack", "dense", m.spack, m.macs, m.params));
  }
  Row bad = make_row("small", "winograd", "dense", 0.001, 1000, 10);
  bad.set("status", std::string(kStatusCrashed));
  rows.push_back(bad);
  return rows;
}

const Table& find_table(const std::vector<Table>& ts, const std::string& id) {
  for (const Table& t : ts)
    if (t.id == id) return t;
  throw std::runtime_error("no table " + id);
}
size_t column(const Table& t, const std::string& name) {
  for (size_t i = 0; i < t.header.size(); ++i)
    if (t.header[i] == name) return i;
  throw std::runtime_error("no column " + name + " in " + t.id);
}

TEST(StudyReport, TablesMatchTheRows) {
  const std::vector<Row> rows = fixture();
  const std::vector<Table> tables = report_tables(rows);

  // Fastest algorithm per compression: spatial-pack, spatial-pack, direct.
  const Table& fa = find_table(tables, "fastest_algorithm");
  ASSERT_EQ(fa.cells.size(), 3u);
  std::map<std::string, std::string> fastest;
  for (const auto& r : fa.cells) fastest[r[column(fa, "model")]] = r[column(fa, "dense")];
  EXPECT_EQ(fastest["small"], "spatial-pack (1.000)");
  EXPECT_EQ(fastest["medium"], "spatial-pack (7.000)");
  EXPECT_EQ(fastest["large"], "direct (20.000)");

  // Overall: slowest / fastest and median / fastest.
  const Table& of = find_table(tables, "overall_fastest");
  for (const auto& r : of.cells) {
    if (r[column(of, "model")] != "large") continue;
    EXPECT_EQ(r[column(of, "fastest")], "dense+direct");
    EXPECT_EQ(r[column(of, "x_slowest")], "1.50");
    EXPECT_EQ(r[column(of, "x_median")], "1.25");
    EXPECT_EQ(r[column(of, "variants")], "3");
  }

  // Latency: every ok row once with its median; the crashed row absent.
  const Table& lat = find_table(tables, "latency");
  EXPECT_EQ(lat.cells.size(), 9u);
  for (const Row& row : rows) {
    if (row.text("status") != kStatusOk) continue;
    int found = 0;
    for (const auto& r : lat.cells)
      if (r[column(lat, "model")] == row.text("model") &&
          r[column(lat, "algorithm")] == row.text("conv_algo")) {
        ++found;
        EXPECT_DOUBLE_EQ(std::stod(r[column(lat, "median_ms")]), row.real("median_ms"));
      }
    EXPECT_EQ(found, 1) << row.text("variant_id");
  }
  for (const auto& r : lat.cells) EXPECT_NE(r[column(lat, "algorithm")], "winograd");

  // Correlation over the three models' fastest dense latency (1, 7, 20 ms): MACs rank
  // the same way (rho = 1); params (10, 300, 50) give rho = 0.5.
  const Table& co = find_table(tables, "correlation");
  bool macs_seen = false, params_seen = false;
  for (const auto& r : co.cells) {
    if (r[column(co, "y")] != "latency_ms") continue;
    if (r[column(co, "x")] == "macs") {
      macs_seen = true;
      EXPECT_EQ(r[column(co, "spearman")], "1.000");
    }
    if (r[column(co, "x")] == "params") {
      params_seen = true;
      EXPECT_EQ(r[column(co, "spearman")], "0.500");
    }
  }
  EXPECT_TRUE(macs_seen && params_seen);
  EXPECT_TRUE(find_table(tables, "speedup").cells.empty());
}

// The summary: per model the fastest variant over threads, compressions, algorithms and
// backends, against dense + auto untuned at the same threads; accuracy and its change.
TEST(StudyReport, SummaryNamesTheFastestDeploymentAndItsBaseline) {
  auto scored = [](Row r, double top1) {
    r.set("dataset", std::string("fashion-mnist"));
    r.set("accuracy", top1);
    return r;
  };
  std::vector<Row> rows = {
      scored(make_row("m", "auto", "dense", 10.0, 1000, 10, "avx2", 1), 0.90),
      scored(make_row("m", "auto", "dense", 6.0, 1000, 10, "avx2", 2), 0.90),
      scored(make_row("m", "gemm", "wp:0.9", 3.0, 1000, 10, "avx2", 2), 0.85),
      make_row("m", "onednn", "dense", 5.0, 1000, 10, "avx2", 2, "onednn"),
      // Without an auto row the baseline is the fastest untuned dense dlas algorithm, named;
      // the fastest here is oneDNN, whose accuracy comes from dlas's dense row.
      scored(make_row("n", "direct", "dense", 8.0, 1000, 10, "avx2", 1), 0.70),
      scored(make_row("n", "gemm", "dense", 4.0, 1000, 10, "avx2", 1), 0.70),
      make_row("n", "onednn", "dense", 2.0, 1000, 10, "avx2", 1, "onednn"),
  };
  for (Row& r : rows)  // oneDNN rows are built for the dataset too, but not scored
    if (!r.has("dataset")) r.set("dataset", std::string("fashion-mnist"));
  const std::vector<Table> tables = report_tables(rows);
  ASSERT_EQ(tables.front().id, "summary");
  const Table& t = tables.front();
  ASSERT_EQ(t.cells.size(), 2u);
  std::map<std::string, std::vector<std::string>> by_model;
  for (const auto& r : t.cells) by_model[r[column(t, "model")]] = r;
  // m's fastest variant (wp:0.9, 3 ms) loses 5 points: the deployment is the fastest within
  // one point of dense fp32 (oneDNN dense, 5 ms), and the 3 ms one is named beside it.
  const auto& m = by_model.at("m");
  EXPECT_EQ(m[column(t, "deployment")], "dense + onednn");
  EXPECT_EQ(m[column(t, "threads")], "2");
  EXPECT_EQ(m[column(t, "tuning")], "untuned");
  EXPECT_EQ(m[column(t, "baseline")], "dense + auto");
  EXPECT_EQ(m[column(t, "baseline_ms")], "6.0000");  // same threads, not the 1-thread 10 ms
  EXPECT_EQ(m[column(t, "speedup")], "1.20");
  EXPECT_EQ(m[column(t, "top1")], "90.00 *");
  EXPECT_EQ(m[column(t, "top1_change")], "+0.00");
  EXPECT_EQ(m[column(t, "fastest_any")], "wp:0.9 + gemm, 2T: 3.0000 ms, top-1 85.00");
  // Within the budget the fastest is the deployment, and fastest_any says so.
  rows[2].set("accuracy", 0.895);
  const std::vector<Table> within = report_tables(rows);
  for (const auto& r : within.front().cells)
    if (r[column(t, "model")] == "m") {
      EXPECT_EQ(r[column(t, "deployment")], "wp:0.9 + gemm");
      EXPECT_EQ(r[column(t, "top1_change")], "-0.50");
      EXPECT_EQ(r[column(t, "fastest_any")], "-");
    }
  const auto& n = by_model.at("n");
  EXPECT_EQ(n[column(t, "deployment")], "dense + onednn");
  EXPECT_EQ(n[column(t, "baseline")], "dense + gemm (no auto row)");
  EXPECT_EQ(n[column(t, "speedup")], "2.00");
  EXPECT_EQ(n[column(t, "top1")], "70.00 *");
  EXPECT_EQ(n[column(t, "top1_change")], "+0.00");
  EXPECT_EQ(n[column(t, "fastest_any")], "-");
}

TEST(StudyReport, SpeedupAgainstDenseTwin) {
  std::vector<Row> rows = {make_row("m", "gemm", "dense", 10.0, 1000, 10),
                           make_row("m", "gemm", "wp:0.9", 4.0, 1000, 10),
                           make_row("m", "gemm", "cp:0.5", 5.0, 250, 3),
                           make_row("m", "gemm", "wp:0.9+int8", 2.0, 1000, 10),
                           make_row("m", "gemm", "bp:4x1:0.75:layer", 5.0, 1000, 10)};
  const std::vector<Table> tables = report_tables(rows);
  const Table& sp = find_table(tables, "speedup");
  ASSERT_EQ(sp.cells.size(), 4u);
  std::map<std::string, std::vector<std::string>> by;
  for (const auto& r : sp.cells) by[r[column(sp, "compress")]] = r;
  EXPECT_EQ(by["wp:0.9"][column(sp, "expected")], "10.00");
  EXPECT_EQ(by["wp:0.9"][column(sp, "achieved")], "2.50");
  EXPECT_EQ(by["wp:0.9"][column(sp, "pct_of_expected")], "25.0");
  EXPECT_EQ(by["cp:0.5"][column(sp, "expected")], "4.00");  // MAC ratio 1000 / 250
  EXPECT_EQ(by["wp:0.9+int8"][column(sp, "expected")], "40.00");
  EXPECT_EQ(by["bp:4x1:0.75:layer"][column(sp, "expected")], "4.00");
}

TEST(StudyReport, ContextsSeparatePlatformsAndKeepVendorBackendAsAlgorithm) {
  // oneDNN rows carry opt level 0 (it has no dlas passes): they still join dlas's context.
  Row onednn = make_row("m", "onednn", "dense", 1.5, 1000, 10, "avx2", 2, "onednn");
  onednn.set("opt_level", int64_t{0});
  std::vector<Row> rows = {make_row("m", "gemm", "dense", 2.0, 1000, 10), onednn,
                           make_row("m", "gemm", "dense", 9.0, 1000, 10, "scalar")};
  const std::vector<Table> tables = report_tables(rows);
  const Table& fa = find_table(tables, "fastest_algorithm");
  ASSERT_EQ(fa.cells.size(), 2u);  // avx2 (gemm + onednn) and scalar (emulated)
  std::map<std::string, std::string> by;
  for (const auto& r : fa.cells) by[r[column(fa, "platform")]] = r[column(fa, "dense")];
  EXPECT_EQ(by["Test CPU / avx2 / 2T / default"], "onednn (1.500)");
  EXPECT_EQ(by["Test CPU / scalar (emulated) / 2T / default"], "gemm (9.000)");
}

// The tuning table: dlas's tuned variant against its untuned twin, and TVM tuned by
// MetaSchedule against TVM untuned, once each although the peer rows join two contexts.
TEST(StudyReport, TuningTableListsDlasTuneAndMetaSchedule) {
  Row tvm = make_row("m", "tvm", "dense", 8.0, 1000, 10, "avx2", 2, "tvm");
  Row tuned_tvm = make_row("m", "tvm-tuned", "dense", 2.0, 1000, 10, "avx2", 2, "tvm-tuned");
  tuned_tvm.set("tuning_s", 300.0);
  tuned_tvm.set("tuning_trials", int64_t{64});
  Row tuned = make_row("m", "gemm", "dense", 3.0, 1000, 10, "avx2", 2, "dlas", "tuned:3s");
  tuned.set("tuning_s", 3.5);
  tuned.set("tuning_trials", int64_t{40});
  Row other_layout = make_row("m", "gemm", "dense", 5.0, 1000, 10);
  other_layout.set("variant_id", other_layout.text("variant_id") + ";layout=nchw");
  other_layout.set("layout", std::string("nchw"));
  const std::vector<Row> rows = {make_row("m", "gemm", "dense", 4.0, 1000, 10), tuned,
                                 other_layout, tvm, tuned_tvm};
  const std::vector<Table> tables = report_tables(rows);
  const Table& t = find_table(tables, "tuning");
  ASSERT_EQ(t.cells.size(), 2u);
  std::map<std::string, std::vector<std::string>> by;
  for (const auto& r : t.cells) by[r[column(t, "algorithm")]] = r;
  ASSERT_EQ(by.count("gemm"), 1u);
  EXPECT_EQ(by["gemm"][column(t, "speedup")], "1.33");
  EXPECT_EQ(by["gemm"][column(t, "tuning_s")], "3.5");
  ASSERT_EQ(by.count("tvm"), 1u);
  EXPECT_EQ(by["tvm"][column(t, "schedule")], "metaschedule:64trials");
  EXPECT_EQ(by["tvm"][column(t, "untuned_ms")], "8.0000");
  EXPECT_EQ(by["tvm"][column(t, "speedup")], "4.00");
  EXPECT_EQ(by["tvm"][column(t, "tuning_s")], "300.0");
  EXPECT_EQ(by["tvm"][column(t, "trials")], "64");
}

// Rows of a layout study: the same variants under nchw and nchwc (and auto for one), a
// oneDNN row, and another model measured in one layout only.
TEST(StudyReport, DataLayoutsCompareEachVariantAcrossLayouts) {
  auto in_layout = [](Row r, const std::string& layout) {
    r.set("variant_id", r.text("variant_id") + ";layout=" + layout);
    r.set("layout", layout);
    return r;
  };
  Row onednn = make_row("m", "onednn", "dense", 1.5, 1000, 10, "avx2", 2, "onednn");
  onednn.set("opt_level", int64_t{0});
  onednn.set("layout", std::string("auto"));
  std::vector<Row> rows = {in_layout(make_row("m", "gemm", "dense", 4.0, 1000, 10), "nchw"),
                           in_layout(make_row("m", "gemm", "dense", 2.0, 1000, 10), "nchwc"),
                           in_layout(make_row("m", "direct", "dense", 6.0, 1000, 10), "nchw"),
                           in_layout(make_row("m", "direct", "dense", 3.0, 1000, 10), "nchwc"),
                           // auto stored the pre-layout way: no layout column at all
                           make_row("m", "gemm", "dense", 2.5, 1000, 10), onednn,
                           in_layout(make_row("solo", "gemm", "dense", 1.0, 10, 1), "nchwc")};
  const std::vector<Table> tables = report_tables(rows);
  std::vector<std::string> ids;
  for (const Table& t : tables) ids.push_back(t.id);
  const auto tuning = std::find(ids.begin(), ids.end(), "tuning");
  ASSERT_NE(tuning, ids.end());
  EXPECT_EQ(*std::next(tuning), "layouts");  // right after the tuning table
  const Table& lt = find_table(tables, "layouts");
  EXPECT_EQ(lt.title, "Data layouts");
  EXPECT_EQ(lt.header, (std::vector<std::string>{"platform", "model", "batch", "opt", "algorithm",
                                                 "compress", "nchw_ms", "nchwc_ms", "auto_ms",
                                                 "nchwc_vs_nchw", "auto_vs_nchw"}));
  // direct, gemm, then the fastest of each layout; oneDNN and the one-layout model left out.
  ASSERT_EQ(lt.cells.size(), 3u);
  std::map<std::string, std::vector<std::string>> by;
  for (const auto& r : lt.cells) {
    EXPECT_EQ(r[column(lt, "platform")], "Test CPU / avx2 / 2T / default");
    EXPECT_EQ(r[column(lt, "model")], "m");
    by[r[column(lt, "algorithm")]] = r;
  }
  const auto& gemm = by["gemm"];
  EXPECT_EQ(gemm[column(lt, "nchw_ms")], "4.0000");
  EXPECT_EQ(gemm[column(lt, "nchwc_ms")], "2.0000");
  EXPECT_EQ(gemm[column(lt, "auto_ms")], "2.5000");
  EXPECT_EQ(gemm[column(lt, "nchwc_vs_nchw")], "2.00");
  EXPECT_EQ(gemm[column(lt, "auto_vs_nchw")], "1.60");
  const auto& direct = by["direct"];
  EXPECT_EQ(direct[column(lt, "auto_ms")], "-");
  EXPECT_EQ(direct[column(lt, "nchwc_vs_nchw")], "2.00");
  EXPECT_EQ(direct[column(lt, "auto_vs_nchw")], "-");
  const auto& fastest = by["fastest"];
  EXPECT_EQ(fastest[column(lt, "compress")], "any");
  EXPECT_EQ(fastest[column(lt, "nchw_ms")], "4.0000");  // oneDNN's 1.5 is not a layout's
  EXPECT_EQ(fastest[column(lt, "nchwc_ms")], "2.0000");

  // Elsewhere the layouts are separate contexts, oneDNN a reference point in each of them.
  const Table& fa = find_table(tables, "fastest_algorithm");
  std::map<std::string, std::string> best;
  for (const auto& r : fa.cells)
    if (r[column(fa, "model")] == "m") best[r[column(fa, "platform")]] = r[column(fa, "dense")];
  EXPECT_EQ(best, (std::map<std::string, std::string>{
                      {"Test CPU / avx2 / 2T / default", "onednn (1.500)"},
                      {"Test CPU / avx2 / 2T / default / nchw", "onednn (1.500)"},
                      {"Test CPU / avx2 / 2T / default / nchwc", "onednn (1.500)"}}));

  // One layout (any of them): no layout table.
  const std::vector<Table> plain = report_tables(fixture());
  EXPECT_TRUE(
      std::none_of(plain.begin(), plain.end(), [](const Table& t) { return t.id == "layouts"; }));
}

const Observation& find_obs(const std::vector<Observation>& os, const std::string& id) {
  for (const Observation& o : os)
    if (o.id == id) return o;
  throw std::runtime_error("no observation " + id);
}

TEST(StudyObserve, HoldsOnOneFixtureFailsOnAnother) {
  // Fixture: spatial-pack wins 2 of 3 models -> VII holds; MACs and latency rank
  // identically -> I fails (strongly correlated).
  std::vector<Observation> os = observe(fixture());
  EXPECT_EQ(find_obs(os, "VII").verdict, "holds");
  EXPECT_NE(find_obs(os, "VII").detail.find("2/3"), std::string::npos);
  EXPECT_EQ(find_obs(os, "I").verdict, "fails");
  EXPECT_EQ(find_obs(os, "VIII").verdict, "not testable");
  EXPECT_EQ(find_obs(os, "IV").verdict, "not testable");

  // Flip it: gemm wins everywhere, and latency no longer follows MACs.
  std::vector<Row> rows;
  const struct {
    const char* model;
    int64_t macs;
    double direct, gemm, spack;
  } models[] = {{"a", 1000, 30, 20, 25},
                {"b", 5000, 3, 1, 2},
                {"c", 20000, 12, 10, 11},
                {"d", 40000, 6, 4, 5}};
  for (const auto& m : models)
    for (const auto& [algo, ms] : {std::pair<std::string, double>{"direct", m.direct},
                                   {"gemm", m.gemm},
                                   {"spatial-pack", m.spack}})
      rows.push_back(make_row(m.model, algo, "dense", ms, m.macs, 10));
  os = observe(rows);
  EXPECT_EQ(find_obs(os, "VII").verdict, "fails");
  EXPECT_NE(find_obs(os, "VII").detail.find("0/4"), std::string::npos);
  EXPECT_EQ(find_obs(os, "I").verdict, "holds");
}

TEST(StudyObserve, PlatformsAndPruning) {
  std::vector<Row> rows;
  for (const char* m : {"a", "b", "c", "d"}) {
    rows.push_back(make_row(m, "gemm", "dense", 10.0, 1000, 10, "avx2", 2));
    rows.push_back(make_row(m, "gemm", "dense", 18.0, 1000, 10, "avx2", 1));
    rows.push_back(make_row(m, "gemm", "wp:0.95", 6.0, 1000, 10, "avx2", 2));
    rows.push_back(make_row(m, "gemm", "cp:0.5", 7.0, 250, 10, "avx2", 2));
  }
  const std::vector<Observation> os = observe(rows);
  // 2 threads faster on 4/4 models.
  EXPECT_EQ(find_obs(os, "XIII").verdict, "holds");
  // wp: 10/6 = 1.67x of 20x (8%); cp: 10/7 = 1.43x of 4x (36%): wp faster, lower share.
  EXPECT_EQ(find_obs(os, "IV").verdict, "holds");
  EXPECT_EQ(find_obs(os, "X").verdict, "holds");
  EXPECT_EQ(find_obs(os, "XI").verdict, "not testable");
}

// The words of a text: runs of letters, digits and '_'.
std::set<std::string> words_of(const std::string& text) {
  std::set<std::string> words;
  std::string w;
  for (char c : text + " ") {
    if (std::isalnum(static_cast<unsigned char>(c)) || c == '_') {
      w += c;
    } else if (!w.empty()) {
      words.insert(w);
      w.clear();
    }
  }
  return words;
}

TEST(StudyObserve, EveryRowHasAClaimAndNotTestableNamesASpecKey) {
  const std::vector<std::string>& dims = study_dimensions();
  for (const std::vector<Row>& rows : {std::vector<Row>{}, fixture()}) {
    const std::vector<Observation> os = observe(rows);
    ASSERT_EQ(os.size(), 13u);
    std::set<std::string> ids;
    for (const Observation& o : os) {
      EXPECT_TRUE(ids.insert(o.id).second) << o.id;
      EXPECT_FALSE(o.claim.empty()) << o.id;
      if (o.verdict != "not testable") continue;
      // What data would make it testable, in the spec's own terms.
      EXPECT_NE(o.detail.find("[space]"), std::string::npos) << o.id << ": " << o.detail;
      const std::set<std::string> words = words_of(o.detail);
      EXPECT_TRUE(std::any_of(dims.begin(), dims.end(),
                              [&](const std::string& d) { return words.count(d) != 0; }))
          << o.id << ": " << o.detail;
      // In the user's terms: nothing about how or when dlas was built.
      for (const char* history : {"issue", "later", " yet", "not implemented", "todo", "TODO"})
        EXPECT_EQ(o.detail.find(history), std::string::npos) << o.id << ": " << o.detail;
    }
  }
  const std::vector<Observation> none = observe({});
  EXPECT_NE(find_obs(none, "IV")
                .detail.find("add compress = [\"dense\", \"wp:0.9\", \"cp:0.5\"] to [space]"),
            std::string::npos)
      << find_obs(none, "IV").detail;
  EXPECT_NE(
      find_obs(none, "XI").detail.find("add tuning = [\"untuned\", \"tuned:120s\"] to [space]"),
      std::string::npos)
      << find_obs(none, "XI").detail;
}

TEST(StudyReport, WritesEveryFileAndRefusesAnEmptyDatabase) {
  const fs::path dir =
      fs::temp_directory_path() / ("dlas-report-test-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  const bool have_gnuplot = std::system("gnuplot --version > /dev/null 2>&1") == 0;
  ReportOptions opt;
  opt.plots = have_gnuplot;
  const ReportFiles files = write_report(fixture(), dir.string(), opt);
  EXPECT_EQ(files.tables, 9);  // summary and accuracy_summary (empty: no dataset) included
  for (const std::string& f : files.files) EXPECT_TRUE(fs::exists(dir / f)) << f;
  std::ifstream html(dir / "report.html");
  std::stringstream s;
  s << html.rdbuf();
  EXPECT_NE(s.str().find("Fastest algorithm per compression"), std::string::npos);
  if (have_gnuplot) {
    EXPECT_GE(files.plots, 2);
    EXPECT_NE(s.str().find("<svg"), std::string::npos);  // inlined: self-contained
  }
  std::ifstream csv(dir / "fastest_algorithm.csv");
  std::string header;
  std::getline(csv, header);
  EXPECT_EQ(header, "platform,model,batch,opt,dense\r");
  // No temporary left behind.
  for (const auto& e : fs::directory_iterator(dir))
    EXPECT_EQ(e.path().filename().string().rfind(".", 0), std::string::npos) << e.path();

  std::vector<Row> none = {fixture().back()};  // only the crashed row
  try {
    write_report(none, (dir / "empty").string(), opt);
    ADD_FAILURE() << "report of no ok row accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kInvalidInput);
  }
  fs::remove_all(dir);
}

}  // namespace
}  // namespace dlas::study

// `dlas study report` and `dlas study observe`: the analysis of a results database.
#include <nlohmann/json.hpp>

#include <cstdio>
#include <filesystem>
#include <iostream>
#include <memory>

#include "cli.h"
#include "dlas/study/report.h"
#include "dlas/study/spec.h"
#include "dlas/study/store.h"

namespace dlas::cli {

namespace {

struct ReportArgs {
  std::string db, dir, title, spec;
  std::vector<std::string> sweeps;
  bool no_plots = false, json = false;
};

// A table as JSON: an array of objects keyed by its header.
nlohmann::ordered_json table_json(const study::Table& t) {
  nlohmann::ordered_json a = nlohmann::ordered_json::array();
  for (const auto& row : t.cells) {
    nlohmann::ordered_json o;
    for (size_t i = 0; i < t.header.size() && i < row.size(); ++i) o[t.header[i]] = row[i];
    a.push_back(o);
  }
  return a;
}
struct ObserveArgs {
  std::string db;
  bool json = false, evidence = false;
};

}  // namespace

void add_study_report_commands(CLI::App& study, Action& run) {
  auto* r = study.add_subcommand(
      "report",
      "Write the study's report: a summary (the fastest deployment per model, its speedup "
      "over dense fp32 and its accuracy), the paper's observations, plots (speedup and latency "
      "heatmaps per platform, accuracy against compression, the platform comparison) and the "
      "tables (the paper's Tables 3/4/6: fastest algorithm per compression, "
      "fastest compression per algorithm, overall fastest; latencies; achieved vs expected "
      "speedup; correlations) as Markdown, a self-contained HTML page and CSV (plots drawn by "
      "gnuplot)");
  auto ra = std::make_shared<ReportArgs>();
  r->add_option("DB", ra->db, "results database")->required();
  r->add_option("-o,--output", ra->dir, "output folder (created when missing)")->required();
  r->add_option("--title", ra->title, "report title")->default_val("dlas study report");
  r->add_flag("--no-plots", ra->no_plots, "tables only (no gnuplot needed)");
  r->add_flag("--json", ra->json,
              "print the files written, the accuracy summary and the prune-sweep curves as JSON");
  r->add_option("--sweep", ra->sweeps,
                "prune-sweep folder (repeatable): its accuracy-vs-compression curve (Fig. 3)");
  r->add_option("--spec", ra->spec, "study spec whose [accuracy].sweeps to draw");
  r->callback([&run, ra] {
    run = [ra] {
      const study::ResultStore store(ra->db, study::ResultStore::Mode::kReadOnly);
      study::ReportOptions opt;
      opt.title = ra->title;
      opt.plots = !ra->no_plots;
      if (!ra->spec.empty()) opt.sweeps = study::parse_study_spec_file(ra->spec).accuracy.loaded;
      for (const std::string& d : ra->sweeps) {
        const std::filesystem::path p(d);
        opt.sweeps.push_back(read_sweep(p.filename() == "sweep.json" ? p : p / "sweep.json"));
      }
      const std::vector<study::Row> rows = store.rows();
      const study::ReportFiles f = study::write_report(rows, ra->dir, opt);
      if (ra->json) {
        nlohmann::ordered_json j;
        j["dir"] = ra->dir;
        j["tables"] = f.tables;
        j["plots"] = f.plots;
        j["files"] = f.files;
        for (const study::Table& t : study::report_tables(rows))
          if (t.id == "accuracy_summary") j["accuracy_summary"] = table_json(t);
        j["accuracy_curves"] = table_json(study::accuracy_curves(opt.sweeps));
        std::cout << j.dump(2) << "\n";
      } else {
        std::fprintf(stderr, "study report: %d tables, %d plots in %s (open report.html)\n",
                     f.tables, f.plots, ra->dir.c_str());
      }
      return 0;
    };
  });

  auto* o = study.add_subcommand(
      "observe",
      "For each of the DLAS paper's 13 observations the data can test, whether it holds here, "
      "with the rows that show it");
  auto oa = std::make_shared<ObserveArgs>();
  o->add_option("DB", oa->db, "results database")->required();
  o->add_flag("--evidence", oa->evidence, "list the rows behind each verdict");
  o->add_flag("--json", oa->json, "print one JSON array");
  o->callback([&run, oa] {
    run = [oa] {
      const study::ResultStore store(oa->db, study::ResultStore::Mode::kReadOnly);
      const std::vector<study::Observation> obs = study::observe(store.rows());
      if (oa->json) {
        nlohmann::ordered_json j = nlohmann::ordered_json::array();
        for (const auto& ob : obs)
          j.push_back({{"id", ob.id},
                       {"claim", ob.claim},
                       {"verdict", ob.verdict},
                       {"detail", ob.detail},
                       {"evidence", ob.evidence}});
        std::cout << j.dump(2) << "\n";
        return 0;
      }
      for (const auto& ob : obs) {
        std::printf("%-5s %-13s %s\n      %s\n", ob.id.c_str(), ob.verdict.c_str(),
                    ob.claim.c_str(), ob.detail.c_str());
        if (oa->evidence)
          for (const auto& e : ob.evidence) std::printf("        - %s\n", e.c_str());
      }
      return 0;
    };
  });
}

}  // namespace dlas::cli

// dlas study: the across-stack study -- run a spec into a SQLite store (`study run`); the
// other subcommands are in cmd_study_*.cc. The work lives in src/study/; this parses flags.
#include <unistd.h>

#include <climits>
#include <cstdio>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>

#include "cli.h"
#include "dlas/core/error.h"
#include "dlas/core/progress.h"
#include "dlas/study/mpi.h"
#include "dlas/study/runner.h"
#include "dlas/study/spec.h"
#include "dlas/study/store.h"

namespace dlas::cli {
namespace {

struct StudyRunArgs {
  std::string spec, db, shard;
  double timeout_s = -1;
  bool dry_run = false, json = false;
};

// The binary the measuring children run: /proc/self/exe itself, not the path it links to,
// so the children run this very binary (its inode) even when a rebuild replaces the file
// mid-study -- one study, one binary.
std::string self_exe() {
  char buf[PATH_MAX];
  DLAS_CHECK(::readlink("/proc/self/exe", buf, sizeof buf - 1) > 0, ErrorKind::kRuntime,
             "cannot find the dlas binary (/proc/self/exe)");
  return "/proc/self/exe";
}

// The one-line plan of the run (stderr), before the first variant.
void print_plan(const study::StudySpec& spec, const study::RunOptions& o, const study::RunEvent& e,
                bool dry_run) {
  size_t stored = 0;
  for (const auto& pv : *e.plan) stored += pv.already_ok;
  const size_t total = e.plan->size();
  std::fprintf(
      stderr, "study '%s': %zu variants%s, %zu stored ok on this hardware, %zu to %s\n",
      spec.name.c_str(), total,
      o.shard.active()
          ? str(" in shard ", o.shard.index, "/", o.shard.count, " (", o.shard.source, ")").c_str()
          : "",
      stored, total - stored, dry_run ? "run (dry run)" : "run");
}

void print_summary_json(const study::StudySpec& spec, const study::RunOptions& o,
                        const study::RunSummary& s) {
  nlohmann::ordered_json j;
  j["study"] = spec.name;
  j["db"] = o.db_path;
  j["hardware_id"] = s.hardware_id;
  j["shard"] = {{"index", s.shard.index}, {"count", s.shard.count}, {"source", s.shard.source}};
  j["expanded"] = s.expanded;
  j["excluded"] = s.excluded;
  j["collapsed"] = s.collapsed;
  j["in_shard"] = s.in_shard;
  j["already_ok"] = s.already_ok;
  j["ran"] = s.ran;
  j["dry_run"] = o.dry_run;
  j["ok"] = s.ok;
  j["failed"] = s.failed;
  j["timeout"] = s.timeout;
  j["crashed"] = s.crashed;
  j["skipped"] = s.skipped;
  j["unsupported"] = s.unsupported;
  auto& cs = j["calibrations"] = nlohmann::ordered_json::array();
  for (const auto& c : s.calibrations) {
    const char* status = c.status == study::ProfileCalibration::kPresent      ? "present"
                         : c.status == study::ProfileCalibration::kCalibrated ? "calibrated"
                                                                              : "planned";
    cs.push_back({{"isa", c.isa},
                  {"threads", c.threads},
                  {"path", c.path},
                  {"status", status},
                  {"seconds", c.seconds}});
  }
  if (!s.calibration_skipped.empty()) j["calibration_skipped"] = s.calibration_skipped;
  auto& vs = j["variants"] = nlohmann::ordered_json::array();
  for (const auto& pv : s.plan)
    vs.push_back({{"variant_id", pv.variant_id}, {"already_ok", pv.already_ok}});
  std::cout << j.dump(2) << "\n";
}

int study_run(const StudyRunArgs& a) {
  const study::StudySpec spec = study::parse_study_spec_file(a.spec);
  study::RunOptions o;
  if (!a.shard.empty()) {
    o.shard = study::parse_shard(a.shard);
  } else if (auto env = study::shard_from_environment()) {
    o.shard = *env;
  }
  o.db_path = a.db;
  // "{shard}" in --db names one database per shard (Slurm arrays: no shared SQLite file on NFS).
  if (const size_t at = o.db_path.find("{shard}"); at != std::string::npos)
    o.db_path.replace(at, 7, std::to_string(o.shard.index));
  DLAS_CHECK(a.dry_run || !o.db_path.empty(), ErrorKind::kUsage, "study run: --db is required");
  o.timeout_s = a.timeout_s;
  o.dry_run = a.dry_run;
  o.exe = self_exe();
  study::RunListener progress = study::progress_printer(progress_tty(a.json));
  auto listener = [&](const study::RunEvent& e) {
    if (e.kind == study::RunEvent::kPlanned) print_plan(spec, o, e, a.dry_run);
    if (!a.json || e.kind != study::RunEvent::kPlanned) progress(e);
  };
  study::RunSummary s;
  if (a.shard.empty() && !a.dry_run && study::mpi_launch_size()) {
    // Under `mpirun -n K` (and no --shard): one shard and database per rank, merged at the end.
    const study::MpiWorld mpi;
    if (const int rc = study::run_study_mpi(mpi, spec, o, listener, &s); rc != 0) return rc;
  } else {
    s = study::run_study(spec, o, listener);
  }
  if (a.json) {
    print_summary_json(spec, o, s);
  } else if (a.dry_run) {
    for (const auto& pv : s.plan)
      std::printf("%s  %s\n", pv.already_ok ? "stored" : "run   ", pv.variant_id.c_str());
  } else {
    std::fprintf(stderr,
                 "study '%s': ran %zu: %zu ok, %zu failed, %zu timeout, %zu crashed, %zu skipped, "
                 "%zu unsupported; "
                 "results in %s\n",
                 spec.name.c_str(), s.ran, s.ok, s.failed, s.timeout, s.crashed, s.skipped, s.unsupported,
                 o.db_path.c_str());
  }
  return 0;
}

}  // namespace

void add_study_command(CLI::App& app, Action& run) {
  auto* study = app.add_subcommand(
      "study", "The across-stack study: run a TOML spec into a SQLite store, merge, export");
  study->require_subcommand(1);

  auto* r = study->add_subcommand(
      "run",
      "Measure every variant of a spec (cartesian product minus [[exclude]]), each in a child "
      "process with a time limit; variants stored ok for this hardware are not rerun");
  auto ra = std::make_shared<StudyRunArgs>();
  r->add_option("SPEC", ra->spec, "study spec (TOML)")->required();
  r->add_option("--db", ra->db,
                "results database (SQLite), created when missing; \"{shard}\" is replaced by the "
                "shard index");
  r->add_option("--timeout", ra->timeout_s,
                "seconds one variant may take before its process group is killed (default: the "
                "spec's [study].timeout, 600; 0: no limit)")
      ->check(CLI::Range(0.0, 1e7));
  r->add_option("--shard", ra->shard,
                "run slice I of N (I/N, 0-based; variant k belongs to shard k mod N); default: "
                "from SLURM_ARRAY_TASK_ID/COUNT/MIN when set");
  r->add_flag("--dry-run", ra->dry_run, "list the variants (run or already stored), measure none");
  r->add_flag("--json", ra->json, "print a JSON summary on stdout");
  r->callback([&run, ra] { run = [ra] { return study_run(*ra); }; });

  add_study_store_commands(*study, run);
  add_study_report_commands(*study, run);
  add_study_exec_command(*study, run);
}

}  // namespace dlas::cli

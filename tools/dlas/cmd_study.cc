// dlas study: the across-stack study -- run a spec into a SQLite store, merge
// stores of shards, export rows. The work lives in src/study/; this parses flags.
#include <unistd.h>

#include <climits>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>

#include "cli.h"
#include "dlas/core/error.h"
#include "dlas/hw/isa.h"
#include "dlas/study/mpi.h"
#include "dlas/study/runner.h"
#include "dlas/study/spec.h"
#include "dlas/study/store.h"

namespace dlas::cli {
namespace {

namespace fs = std::filesystem;

struct StudyRunArgs {
  std::string spec, db, shard;
  double timeout_s = -1;
  bool dry_run = false, json = false;
};

struct StudyExportArgs {
  std::string db, format = "csv", output;
};

struct StudyMergeArgs {
  std::vector<std::string> inputs;
  std::string output;
};

// The children run this very binary.
// The binary the measuring children run: /proc/self/exe itself, not the path it links to,
// so the children run this very binary (its inode) even when a rebuild replaces the file
// mid-study -- one study, one binary.
std::string self_exe() {
  char buf[PATH_MAX];
  DLAS_CHECK(::readlink("/proc/self/exe", buf, sizeof buf - 1) > 0, ErrorKind::kRuntime,
             "cannot find the dlas binary (/proc/self/exe)");
  return "/proc/self/exe";
}

// Writes `text` to `path` through a temporary file and a rename.
void write_atomically(const std::string& path, const std::string& text) {
  const std::string tmp = path + ".tmp-" + std::to_string(::getpid());
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    DLAS_CHECK(out, ErrorKind::kInvalidInput, path, ": cannot write");
    out << text;
    out.flush();
    if (!out) {
      out.close();
      std::error_code ec;
      fs::remove(tmp, ec);
      fail(ErrorKind::kInvalidInput, path, ": write failed (disk full?)");
    }
  }
  std::error_code ec;
  fs::rename(tmp, path, ec);
  if (ec) {
    fs::remove(tmp, ec);
    fail(ErrorKind::kInvalidInput, path, ": cannot write (", ec.message(), ")");
  }
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
  // Under `mpirun -n K` (and no --shard): rank r runs shard r/K into DB.rank<r>, seeded with
  // DB's rows so finished variants are not rerun; after a barrier rank 0 merges the copies
  // into DB (one SQLite file per rank: no shared writes, safe on NFS).
  std::unique_ptr<study::MpiWorld> mpi;
  std::string merged_db;
  if (a.shard.empty() && !a.dry_run && study::mpi_launch_size()) {
    mpi = std::make_unique<study::MpiWorld>();
    o.shard = {mpi->rank(), mpi->size(), "mpi"};
    merged_db = o.db_path;
    o.db_path = merged_db + ".rank" + std::to_string(mpi->rank());
    bool seeded = true;
    try {
      if (fs::exists(merged_db)) study::merge_stores({merged_db}, o.db_path);
    } catch (const Error& e) {
      std::fprintf(stderr, "error: %s\n", e.what());
      seeded = false;
    }
    if (!mpi->all(seeded)) return 2;  // every rank stops: none waits at a barrier
  }
  o.timeout_s = a.timeout_s;
  o.dry_run = a.dry_run;
  o.exe = self_exe();
  const bool tty = ::isatty(2) && !a.json;
  study::RunListener progress = study::progress_printer(tty);
  auto listener = [&](const study::RunEvent& e) {
    if (e.kind == study::RunEvent::kPlanned) {
      size_t stored = 0;
      for (const auto& pv : *e.plan) stored += pv.already_ok;
      const size_t total = e.plan->size();
      std::fprintf(
          stderr, "study '%s': %zu variants%s, %zu stored ok on this hardware, %zu to %s\n",
          spec.name.c_str(), total,
          o.shard.active()
              ? str(" in shard ", o.shard.index, "/", o.shard.count, " (", o.shard.source, ")")
                    .c_str()
              : "",
          stored, total - stored, a.dry_run ? "run (dry run)" : "run");
    }
    if (!a.json || e.kind != study::RunEvent::kPlanned) progress(e);
  };
  study::RunSummary s;
  if (!mpi) {
    s = study::run_study(spec, o, listener);
  } else {
    bool ok = true;
    try {
      s = study::run_study(spec, o, listener);
    } catch (const Error& e) {
      std::fprintf(stderr, "error: rank %d: %s\n", mpi->rank(), e.what());
      ok = false;
    }
    if (!mpi->all(ok)) return 2;  // the rank databases stay for a rerun
    int rc = 0;
    if (mpi->rank() == 0) {
      std::vector<std::string> parts;
      for (int r = 0; r < mpi->size(); ++r)
        parts.push_back(merged_db + ".rank" + std::to_string(r));
      try {
        const int64_t n = study::merge_stores(parts, merged_db);
        std::error_code ec;
        for (const auto& p : parts)
          for (const char* suffix : {"", "-wal", "-shm"}) fs::remove(p + suffix, ec);
        std::fprintf(stderr, "study run: rank 0 merged %d rank databases (%lld rows) into %s\n",
                     mpi->size(), static_cast<long long>(n), merged_db.c_str());
      } catch (const Error& e) {
        std::fprintf(stderr, "error: rank 0: merge: %s (the rank databases are kept)\n", e.what());
        rc = 2;
      }
    }
    mpi->barrier();
    if (rc != 0) return rc;
    o.db_path = merged_db;
  }

  if (a.json) {
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
    j["dry_run"] = a.dry_run;
    j["ok"] = s.ok;
    j["failed"] = s.failed;
    j["timeout"] = s.timeout;
    j["crashed"] = s.crashed;
    j["skipped"] = s.skipped;
    auto& vs = j["variants"] = nlohmann::ordered_json::array();
    for (const auto& pv : s.plan)
      vs.push_back({{"variant_id", pv.variant_id}, {"already_ok", pv.already_ok}});
    std::cout << j.dump(2) << "\n";
    return 0;
  }
  if (a.dry_run) {
    for (const auto& pv : s.plan)
      std::printf("%s  %s\n", pv.already_ok ? "stored" : "run   ", pv.variant_id.c_str());
    return 0;
  }
  std::fprintf(stderr,
               "study '%s': ran %zu: %zu ok, %zu failed, %zu timeout, %zu crashed, %zu skipped; "
               "results in %s\n",
               spec.name.c_str(), s.ran, s.ok, s.failed, s.timeout, s.crashed, s.skipped,
               o.db_path.c_str());
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

  auto* m = study->add_subcommand(
      "merge", "Merge results databases (e.g. of shards) into one; ok rows win over failed ones");
  auto ma = std::make_shared<StudyMergeArgs>();
  m->add_option("DB", ma->inputs, "input databases")->required();
  m->add_option("-o,--output", ma->output, "merged database (written to a temp file, renamed)")
      ->required();
  m->callback([&run, ma] {
    run = [ma] {
      const int64_t n = study::merge_stores(ma->inputs, ma->output);
      std::fprintf(stderr, "study merge: %lld rows from %zu databases into %s\n",
                   static_cast<long long>(n), ma->inputs.size(), ma->output.c_str());
      return 0;
    };
  });

  auto* e = study->add_subcommand("export",
                                  "Write a results database as CSV or JSON, one row "
                                  "per variant and hardware");
  auto ea = std::make_shared<StudyExportArgs>();
  e->add_option("DB", ea->db, "results database")->required();
  e->add_option("--format", ea->format, "csv or json")
      ->default_val("csv")
      ->check(CLI::IsMember({"csv", "json"}));
  e->add_option("-o,--output", ea->output, "output file (default: stdout)");
  e->callback([&run, ea] {
    run = [ea] {
      const study::ResultStore store(ea->db, study::ResultStore::Mode::kReadOnly);
      const std::string text =
          study::export_rows(store.rows(), ea->format == "json" ? study::ExportFormat::kJson
                                                                : study::ExportFormat::kCsv);
      if (ea->output.empty())
        std::cout << text;
      else
        write_atomically(ea->output, text);
      return 0;
    };
  });

  add_study_report_commands(*study, run);

  // The runner's child: measures one variant, prints its columns as one JSON line.
  auto* x = study->add_subcommand("exec-variant", "");
  x->group("");  // hidden: not for people
  auto xa = std::make_shared<study::MeasureRequest>();
  auto isa = std::make_shared<std::string>();
  Variant& v = xa->variant;
  x->add_option("--model", v.model)->required();
  x->add_option("--model-path", xa->model_path)->required();
  x->add_option("--batch", v.batch);
  x->add_option("--compress", v.compress);
  x->add_option("--backend", v.backend);
  x->add_option("--conv-algo", v.conv_algo);
  x->add_option("--opt-level", v.opt_level);
  x->add_option("--isa", *isa)->required();
  x->add_option("--threads", v.threads);
  x->add_option("--schedule", v.schedule);
  x->add_option("--repeat", xa->repeat);
  x->add_option("--warmup", xa->warmup);
  x->add_option("--input-seed", xa->input_seed);
  x->add_option("--dataset", v.dataset);
  x->add_option("--accuracy-limit", xa->accuracy_limit);
  x->callback([&run, xa, isa] {
    run = [xa, isa] {
      study::MeasureRequest req = *xa;
      req.variant.isa = *isa;
      req.variant.accuracy_limit = req.accuracy_limit;
      if (req.variant.backend != "onednn")
        req.variant.isa_emulated = parse_isa(*isa) < detected_isa();
      std::cout << study::row_to_json(study::measure_variant(req)) << std::endl;
      return 0;
    };
  });
}

}  // namespace dlas::cli

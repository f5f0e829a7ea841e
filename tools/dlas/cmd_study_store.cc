// `dlas study merge` and `dlas study export`: results databases combined and written out.
#include <cstdio>
#include <iostream>
#include <memory>

#include "cli.h"
#include "dlas/core/file.h"
#include "dlas/study/store.h"

namespace dlas::cli {

namespace {

struct StudyExportArgs {
  std::string db, format = "csv", output;
};

struct StudyMergeArgs {
  std::vector<std::string> inputs;
  std::string output;
};

}  // namespace

void add_study_store_commands(CLI::App& study, Action& run) {
  auto* m = study.add_subcommand(
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

  auto* e = study.add_subcommand("export",
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
        write_file_atomic(ea->output, text);
      return 0;
    };
  });
}

}  // namespace dlas::cli

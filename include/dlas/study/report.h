// Study analysis: the paper's summary tables (DLAS Tables 3, 4 and 6), the latency
// matrices behind its bar charts (Figs. 4-7), achieved vs expected speedup of
// compression, the correlation of model size, MACs, accuracy and latency
// (observation I), and the check of the paper's 13 observations on a results
// database. Everything is computed from rows with status ok; a variant is placed
// in a *context* (platform x model x batch x opt level x activation layout, where the
// platform is the CPU, ISA path, threads and schedule it ran with, or the GPU, its device and
// the schedule) and compared with the
// other variants of that context along the algorithm and compression dimensions.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "dlas/optimize/prune_sweep.h"
#include "dlas/study/store.h"

namespace dlas::study {

// A rectangular table with a stable id (also its CSV file name).
struct Table {
  std::string id;     // "fastest_algorithm"
  std::string title;  // one line
  std::string note;   // what it shows and how it was computed (may be empty)
  std::vector<std::string> header;
  std::vector<std::vector<std::string>> cells;  // each row has header.size() cells
};

// The algorithm dimension of a row: conv_algo for the dlas backend, the backend
// name otherwise (a vendor library is one more algorithm choice to compare).
std::string algorithm_of(const Row& row);
// "AMD EPYC / avx2 / 2T / default" (+ " (emulated)"): where and how a row ran; on a GPU
// "NVIDIA H100 80GB HBM3 / cuda:0 / default" (the gpu column, else "GPU").
std::string platform_of(const Row& row);

// The report's tables, in report order:
//   summary              per CPU, model, dataset and batch: the fastest deployment over
//                        everything measured, its median, its speedup over the model's dense
//                        fp32 dlas baseline (untuned, same threads, auto), top-1 and change
//   fastest_algorithm    context x compression -> fastest algorithm (Tables 3/4/6, left)
//   fastest_compression  context x algorithm -> fastest compression (middle)
//   overall_fastest      context -> fastest variant, its latency and its speedup over the
//                        slowest and the median variant of the context (right)
//   latency              every ok variant: context, algorithm, compression, median/p10/p90
//   speedup              compressed variants vs the dense variant of the same algorithm:
//                        expected (1/(1-s) weight/block pruning, MAC ratio channel pruning,
//                        2x fp16/bf16, 4x int8), achieved, % of expected
//   layouts              only when the study has several activation layouts: each dlas
//                        variant's median per layout and the speedup of each layout over
//                        NCHW, plus each layout's fastest variant ("Data layouts")
//   correlation          per platform: Spearman and Pearson correlation over models of
//                        params, MACs, accuracy (when measured) and best latency
//   accuracy_summary     per context with accuracy and compression (Tables 2/5): params,
//                        nonzero params, MACs, top-1/top-5, top-1 loss vs dense,
//                        compression ratio, latency and speedup vs dense
std::vector<Table> report_tables(const std::vector<Row>& rows);

// The prune-sweep curves (Fig. 3) as one table: per sweep its baseline and every level
// (top-1 after and before fine-tuning, achieved sparsity, params, MACs, the elbow marked).
Table accuracy_curves(const std::vector<SweepResult>& sweeps);

// One of the paper's observations checked on the data.
struct Observation {
  std::string id;                     // "I" .. "XIII"
  std::string claim;                  // the paper's words, shortened
  std::string verdict;                // "holds" | "fails" | "mixed" | "not testable"
  std::string detail;                 // "holds for 3/4 models", or why it is not testable
  std::vector<std::string> evidence;  // variant ids / one line per context that shows it
};
std::vector<Observation> observe(const std::vector<Row>& rows);

struct ReportOptions {
  std::string title = "dlas study report";
  bool plots = true;  // run gnuplot for the figures (SVG + PNG)
  // Prune-sweeps (the spec's [accuracy].sweeps): the accuracy_curves table and one Fig. 3
  // plot per model and dataset (accuracy-<model>.svg/.png).
  std::vector<SweepResult> sweeps;
};
struct ReportFiles {
  std::vector<std::string> files;  // every file written, relative to the folder
  int tables = 0, plots = 0;
};
// Writes into `dir` (created when missing): report.md, report.html (self-contained:
// plots inlined as SVG), <table id>.csv for every table, observations.csv and the
// plots (<name>.svg, <name>.png). Every file is written to a temporary name and
// renamed. Throws kInvalidInput when `dir` cannot be written or there is no ok row,
// kRuntime when gnuplot fails.
ReportFiles write_report(const std::vector<Row>& rows, const std::string& dir,
                         const ReportOptions& options = {});

// CSV of one table (RFC 4180 quoting).
std::string table_csv(const Table& t);
// GitHub-flavoured Markdown of one table.
std::string table_markdown(const Table& t);
// Text for HTML: <, >, & and " escaped (the report's and dlas explore's pages).
std::string html_escape(std::string_view text);

}  // namespace dlas::study

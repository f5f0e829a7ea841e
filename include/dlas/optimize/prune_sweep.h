// The paper's iterative prune-and-fine-tune sweep (DLAS Section 5.3) as data: the
// accuracy-vs-compression curve of one model, one dataset and one pruning method, and its
// elbow. `dlas prune-sweep` (libtorch, tools/dlas-train) produces it; studies (compression
// level `elbow`) and reports (Fig. 3 curves, Table 2/5 summaries) read it. This header has
// no torch dependency.
//
// A sweep directory holds sweep.json (this struct), one fine-tuned ONNX model per level
// (`point.model`, relative to the directory) and elbow.onnx (a copy of the elbow's model);
// `dlas prune-sweep` also writes baseline.onnx (baseline.model) and curve.csv.
//
//   SweepResult r = read_sweep("sweeps/resnet18-weight/sweep.json");
//   if (r.elbow >= 0) use(r.points[r.elbow].spec, r.dir / r.points[r.elbow].model);
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "dlas/optimize/prune.h"

namespace dlas {

// Accuracy of one deployed numeric variant of a model (the dlas engine, test split).
struct SweepQuant {
  std::string compress;  // "fp16", "int8:none" (uncalibrated), "int8:minmax", ...
  double top1 = -1, top5 = -1;
};

struct SweepPoint {
  double level = 0;     // requested fraction pruned (0 = the baseline)
  std::string spec;     // the --compress spec that produced it: "wp:0.9", "cp:0.35", "dense"
  double achieved = 0;  // PruneReport::sparsity() of the fine-tuned model
  double top1 = -1;     // after fine-tuning (fractions in [0,1]; -1 = not measured)
  double top5 = -1;
  double top1_pruned = -1;  // right after pruning, before this level's fine-tuning
  int64_t params = 0;       // all parameters of the deployed graph (channel pruning shrinks it)
  int64_t nonzero_params = 0;
  int64_t macs = 0;            // dense MACs of the deployed graph at batch 1
  double finetune_epochs = 0;  // epochs of fine-tuning spent on this level
  double finetune_seconds = 0;
  std::string model;  // file name of this level's model, relative to the sweep directory
};

struct SweepResult {
  int version = 1;
  std::string model;                          // as given to prune-sweep (zoo name or .onnx path)
  std::string dataset;                        // dataset name as given (e.g. "fashion-mnist")
  PruneMethod method = PruneMethod::kWeight;  // kWeight or kChannel
  double tolerance = 0.01;                    // elbow tolerance, top-1 fraction (0.01 = 1 point)
  double total_finetune_epochs = 0;           // shared evenly across the levels
  int64_t test_samples = 0;                   // test images each accuracy was measured on
  SweepPoint baseline;                        // level 0, the model before pruning
  std::vector<SweepPoint> points;             // ascending level
  int elbow = -1;                             // index into points; -1: no level within tolerance
  std::vector<SweepQuant> baseline_quant;     // fp16, int8 before and after calibration
  std::vector<SweepQuant> elbow_quant;        // the same on the elbow model
  // The settings the sweep was run with, by option name ("lr" -> "0.01", "model-hash" -> ...);
  // `dlas prune-sweep --resume` continues only with equal settings. Optional in sweep.json
  // (absent in sweeps written before it existed, which cannot be resumed).
  std::map<std::string, std::string> settings;
  std::filesystem::path dir;  // set by read_sweep (not serialised)
};

// The paper's levels: weight 0.5, 0.6, 0.7, 0.8, 0.9, 0.95, 0.99; channel 0.05, 0.10, ...,
// 0.95 in 5% steps, then 0.99. kInvalidInput for block pruning.
std::vector<double> default_sweep_levels(PruneMethod method);
// A comma list of ascending levels in (0, 1), "0.5,0.9" (empty: default_sweep_levels).
// kInvalidInput naming the list and the part at fault ("levels '0.5,x': 'x' is not a number").
std::vector<double> parse_sweep_levels(std::string_view text, PruneMethod method);

// The elbow rule: the index of the highest level whose top-1 is at least baseline_top1 -
// tolerance (points in any order; ties by position), -1 when no point qualifies.
int find_elbow(const std::vector<SweepPoint>& points, double baseline_top1, double tolerance);

// "weight" / "channel" (the CLI's --method names).
const char* sweep_method_name(PruneMethod method);
PruneMethod parse_sweep_method(std::string_view name);  // kInvalidInput otherwise

// JSON (sweep.json). read_sweep: kInvalidInput naming the file and the field that is missing
// or malformed; sets `dir` to the file's directory. write_sweep: temp file + rename.
std::string sweep_to_json(const SweepResult& r);
SweepResult sweep_from_json(const std::string& text, const std::string& source);
SweepResult read_sweep(const std::filesystem::path& path);
void write_sweep(const std::filesystem::path& path, const SweepResult& r);

}  // namespace dlas

// `dlas prune-sweep`'s checks of its arguments, run by bin/dlas before the exec (bad input
// fails before libtorch loads) and again by bin/dlas-train.
#include <filesystem>

#include "cmd_train.h"
#include "dlas/model/zoo.h"
#include "dlas/optimize/prune_sweep.h"

namespace dlas::cli {

namespace fs = std::filesystem;

std::vector<double> sweep_levels_from_args(const SweepArgs& a) {
  try {
    return parse_sweep_levels(a.levels, parse_sweep_method(a.method));
  } catch (const Error& e) {
    fail(ErrorKind::kUsage, "--", e.what());  // "--levels '0.5,x': 'x' is not a number"
  }
}

void check_sweep_args(const SweepArgs& a) {
  DLAS_CHECK(!a.output.empty(), ErrorKind::kUsage, "-o: an output directory is required");
  parse_preprocess_args(a.preprocess);  // bad values fail before the exec
  try {
    parse_sweep_method(a.method);
  } catch (const Error&) {
    fail(ErrorKind::kUsage, "--method '", a.method, "': expected weight or channel",
         a.method == "block" ? " (block pruning is not swept)" : "");
  }
  sweep_levels_from_args(a);
  const bool zoo = find_zoo_model(a.model) != nullptr;
  DLAS_CHECK(!zoo || a.train_epochs > 0, ErrorKind::kUsage, "'", a.model,
             "' is a zoo model: add --train-epochs N to train the baseline first (or sweep a "
             ".onnx trained with `dlas train`)");
  DLAS_CHECK(zoo || a.train_epochs == 0, ErrorKind::kUsage,
             "--train-epochs applies to zoo models only, not '", a.model, "'");
  DLAS_CHECK(zoo || a.width_mult == 1.0, ErrorKind::kUsage,
             "--width-mult applies to zoo models only, not '", a.model, "'");
  DLAS_CHECK(zoo || fs::is_regular_file(a.model), ErrorKind::kInvalidInput, a.model,
             ": no such model file (and not a zoo model, see `dlas zoo`)");
  DLAS_CHECK(a.epochs >= 0, ErrorKind::kUsage, "--epochs must be >= 0");
  DLAS_CHECK(a.label_smoothing >= 0 && a.label_smoothing < 1, ErrorKind::kUsage,
             "--label-smoothing ", exact_number(a.label_smoothing), " is outside [0, 1)");
  DLAS_CHECK(a.tolerance >= 0 && a.tolerance <= 100, ErrorKind::kUsage,
             "--tolerance must be in [0, 100] top-1 points");
  std::error_code ec;
  DLAS_CHECK(!fs::exists(a.output) || fs::is_directory(a.output), ErrorKind::kInvalidInput,
             a.output, ": exists and is not a directory");
  if (a.resume) {
    const fs::path file = fs::path(a.output) / "sweep.json";
    DLAS_CHECK(fs::is_regular_file(file, ec), ErrorKind::kInvalidInput, file.string(),
               ": not found: --resume continues an interrupted `dlas prune-sweep -o ", a.output,
               "`");
    return;
  }
  DLAS_CHECK(a.force || !fs::exists(a.output) || fs::is_empty(a.output, ec),
             ErrorKind::kInvalidInput, a.output,
             ": directory is not empty (use --force to write into it, or --resume to continue "
             "the sweep there)");
}

}  // namespace dlas::cli

// The dlas command line: thin wrappers that parse flags and call the library.
#pragma once

#include <CLI/CLI.hpp>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "dlas/optimize/prune.h"
#include "dlas/system/loader.h"
#include "dlas/system/measure.h"
#include "dlas/system/plan.h"
#include "dlas/system/preprocess_meta.h"
#include "dlas/system/variant.h"

namespace dlas::cli {

// Flags shared by every command that takes a MODEL argument.
struct ModelArgs {
  std::string model;
  std::vector<std::string> input_shapes;  // "name=1x3x224x224" or "1x3x224x224"
  int64_t batch = 1;
  int64_t in_channels = -1;
  int64_t image_size = -1;
  int64_t num_classes = -1;
  double width_mult = 1.0;
  uint64_t seed = 0;
};
void add_model_args(CLI::App& cmd, ModelArgs& args);

// Flags of commands that compile the model for the engine (run, bench, profile).
struct EngineArgs {
  std::string conv_algo = "auto";
  std::string layout = "auto";  // --layout nchw|nchwc|auto
  std::string layers;           // per-layer choices JSON
  int threads = 1;
  std::string isa;  // empty: detected (or DLAS_ISA)
  int opt_level = 3;
  std::string compress = "dense";  // --compress SPEC (dlas/optimize/prune.h)
  std::string records;             // --records FILE: tuned knobs (dlas tune)
  std::string profile;             // --profile FILE|builtin|none: the machine profile
  std::string device = "cpu";      // --device cpu|cuda[:N]
};
void add_engine_args(CLI::App& cmd, EngineArgs& args);
// Parses a --compress value (errors name the flag) and applies it to the graph (pruning
// before compiling). Returns the canonical spec ("dense" when nothing is applied); the
// pruning report goes to *report when given (left alone for "dense"). int8 calibrates on up
// to `threads` workers (the engine's --threads; <= 0: one per logical CPU).
std::string apply_compress(Graph& graph, const std::string& compress, PruneReport* report = nullptr,
                           int threads = 0);
// The canonical form of a --compress value ("dense", "wp:0.9", ...); errors name the flag.
std::string compress_name(const std::string& compress);
// Applies --isa (process-wide) and builds the plan options; with --records, `graph` (the
// model as it will be compiled) gets the records' per-layer choices (--layers wins).
PlanOptions plan_options_from_args(const EngineArgs& args, const Graph* graph = nullptr);
// The per-layer choices of the tuning records in `path` for `graph` (as compiled) added to
// o.layers (a choice already there wins); one "records: ..." line on stderr.
void apply_records_file(const Graph& graph, const std::string& path, PlanOptions& o);
// A model compiled for a command (bench, profile, run): the executor and what it runs.
struct CompiledModel {
  std::unique_ptr<Executor> executor;
  Variant variant;  // as the command reports it (conv=layers:FILE / records:FILE)
  double compile_ms = 0;
  std::string profile = "none";  // the machine profile the plan used: path, builtin:NAME or none
};
// Compiles `graph` for `backend` (make_executor) with the engine flags
// (plan_options_from_args: --isa, --layers, --records apply to the dlas backend; other
// backends choose their own kernels and are labelled by their name).
CompiledModel compile_from_args(const Graph& graph, const ModelArgs& model,
                                const EngineArgs& engine, const std::string& backend = "dlas");
// Loads the model named by args; errors carry the model path or node.
Graph load_model_from_args(const ModelArgs& args);

// The preprocessing flags of every command that feeds a dataset to a model (eval --dataset,
// quantize --calib-data, train, prune-sweep, data info; preprocess_flags.cc): --mean, --std,
// --scale, --channel-order, --input-layout, --resize, --center-crop, as given (empty: not).
struct PreprocessArgs {
  std::string mean, std, scale, channel_order, input_layout, resize, center_crop;
};
void add_preprocess_args(CLI::App& cmd, PreprocessArgs& args);
// The flags parsed; kUsage naming the flag for a malformed number, a std or scale <= 0, an
// unknown channel order or layout.
PreprocessFlags parse_preprocess_args(const PreprocessArgs& args);
// The flags again as arguments (for the exec of bin/dlas-train).
std::vector<std::string> preprocess_arg_list(const PreprocessArgs& args);
// The preprocessing a dataset command feeds `graph` with (flags > the model's metadata > the
// dataset's default; errors name the flag, or `model` and the metadata key), stored in
// `graph`'s metadata so that evaluation, calibration and a written model all follow it. With
// neither flags nor metadata, one warning line on stderr says the default is used (unless
// `warn` is false). `train`: the training-time form (the dataset's augmentation).
ResolvedPreprocess apply_preprocess_args(Graph& graph, const data::DatasetInfo& info,
                                         const PreprocessArgs& args, const std::string& model,
                                         bool train = false, bool warn = true);

// `dlas eval --dataset`: accuracy of the compiled variant on a labelled dataset (cmd_data.cc).
struct DatasetEvalArgs {
  std::string dataset;  // empty: the random-input mode of `dlas eval`
  PreprocessArgs preprocess;
  std::string split = "test";
  int64_t limit = 0;
  bool batch_given = false;  // --batch was given (else 100 images per run)
};
int run_dataset_eval(const ModelArgs& model, const EngineArgs& engine, const DatasetEvalArgs& args,
                     bool json);

// Each command registers itself and sets `run` to its action when selected.
using Action = std::function<int()>;

// Parses argv into `app` and runs the chosen command's action: the exit-code contract of
// every dlas binary (0 ok; 2 bad usage or input, one "dlas: error:" line; 1 runtime failure).
int run_app(CLI::App& app, int argc, char** argv, Action& run);
void add_zoo_command(CLI::App& app, Action& run);
void add_info_command(CLI::App& app, Action& run);
void add_run_command(CLI::App& app, Action& run);
void add_export_command(CLI::App& app, Action& run);
void add_hw_command(CLI::App& app, Action& run);
void add_bench_command(CLI::App& app, Action& run);
void add_profile_command(CLI::App& app, Action& run);
void add_study_command(CLI::App& app, Action& run);
void add_prune_command(CLI::App& app, Action& run);
void add_quantize_command(CLI::App& app, Action& run);
void add_eval_command(CLI::App& app, Action& run);
void add_tune_command(CLI::App& app, Action& run);  // tune and records
void add_explore_command(CLI::App& app, Action& run);
void add_data_command(CLI::App& app, Action& run);
void add_train_command(CLI::App& app, Action& run);        // cmd_train.cc (libtorch when built)
void add_prune_sweep_command(CLI::App& app, Action& run);  // cmd_prune_sweep.cc (as train)
// `study report` and `study observe`, added to the `study` subcommand.
void add_study_report_commands(CLI::App& study, Action& run);
// `study merge` and `study export` (cmd_study_store.cc).
void add_study_store_commands(CLI::App& study, Action& run);
// `study exec-variant` (hidden; cmd_study_exec.cc): the study runner's child.
void add_study_exec_command(CLI::App& study, Action& run);

// bin/dlas does not link libtorch (its start-up would slow every command): `dlas train` and
// `dlas prune-sweep` replace the process with bin/dlas-train (built with
// -DDLAS_WITH_TORCH=ON), running `command` with the parsed arguments in canonical form.
// Signals (Ctrl-C) and the exit status are then the child's. kUnsupported when bin/dlas-train
// is missing, kRuntime when it cannot be run.
[[noreturn]] void exec_dlas_train(const std::string& command, const std::vector<std::string>& args);
// Arguments for an exec: `first` (a positional argument), then each "--flag value" pair.
std::vector<std::string> flag_args(
    const std::string& first, std::initializer_list<std::pair<const char*, std::string>> flags);
// A double as the shortest text that reads back exactly (17 significant digits).
std::string exact_number(double v);

// Formats 1234567 as "1,234,567".
std::string with_commas(int64_t v);

// The steps of a compiled plan that run on a reference kernel (no fast path for their op,
// type or shape), and one line naming them ("" when there are none): what profile marks and
// bench warns about.
std::vector<std::string> reference_steps(const Executor& e);
std::string reference_steps_line(const std::vector<std::string>& steps);
// Where an executor runs: "cpu", or the CUDA plan's "cuda:0 (NVIDIA H100 ..., sm_90)".
std::string device_name(const Executor& e);

// A name cut to a table column: "..." and its last width - 3 characters when longer.
std::string short_name(const std::string& name, size_t width = 44);

}  // namespace dlas::cli

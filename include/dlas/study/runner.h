// The study runner: expands a spec, keeps the variants of this shard that the
// store does not already hold as ok for this hardware, and measures each in a
// child process (the dlas binary itself, `dlas study exec-variant ...`) with a
// time limit, so a crash, hang or out-of-memory kill in one variant becomes a
// stored row (status, reason, stderr tail) and the study goes on.
//
// Only one variant is measured at a time on a machine: every runner takes an
// exclusive flock on a lock file (default /tmp/dlas-measure.lock, or
// $DLAS_MEASURE_LOCK) while its child runs, so shards or studies started side by
// side on one host take turns instead of disturbing each other's timings.
//
// Test-only fault switch: DLAS_STUDY_FAULT="crash:<substring>,hang:<substring>,
// fail:<substring>,oom:<substring>" makes the child crash (SIGSEGV), hang, exit 1, or die
// of SIGKILL as the OOM killer would, for variants whose canonical id contains the substring.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "dlas/study/spec.h"
#include "dlas/study/store.h"
#include "dlas/system/calibrate.h"
#include "dlas/system/variant.h"

namespace dlas::study {

// --- shards ------------------------------------------------------------------
// A deterministic slice of the expanded variant list: point i belongs to shard
// i % count. The list's order depends only on the spec, so every node of a
// cluster computes the same partition whatever its hardware.
struct Shard {
  int index = 0, count = 1;
  std::string source = "none";  // "cli", "slurm" (later: "mpi")
  bool active() const { return count > 1; }
};
// "I/N" with 0 <= I < N. Throws kUsage.
Shard parse_shard(std::string_view text);
// From a Slurm job array: I = (SLURM_ARRAY_TASK_ID - SLURM_ARRAY_TASK_MIN) /
// SLURM_ARRAY_TASK_STEP, N = SLURM_ARRAY_TASK_COUNT. nullopt when not in an array.
// Hook: an MPI launch (rank/size) is the next source to try here.
std::optional<Shard> shard_from_environment();
// Indices of the points of `n` that belong to `shard`.
std::vector<size_t> shard_indices(size_t n, const Shard& shard);

// --- the host ----------------------------------------------------------------
struct HostInfo {
  std::string hardware_id;  // "cpu-" + 16 hex digits of a hash of the fields below but hostname
  std::string hostname, cpu_vendor, cpu_model, detected_isa, cpu_features;
  int64_t cores = 0, logical_cpus = 0, l1d_bytes = 0, l2_bytes = 0, l3_bytes = 0;
};
const HostInfo& current_host();
// Sets the provenance columns (host, dlas version, git sha).
void set_host_columns(Row& row, const HostInfo& host);

// --- variants on this machine ----------------------------------------------
// The Variant a point measures here: "native" ISA -> the active path, threads 0 ->
// every logical CPU. Sets *skip_reason (and returns the variant anyway, for its
// key) when this machine cannot run it (an ISA path the CPU lacks).
Variant resolve_variant(const StudyPoint& point, std::string* skip_reason);

// What the child measures (`dlas study exec-variant` parses these as flags).
struct MeasureRequest {
  Variant variant;         // resolved: ISA and threads exact
  std::string model_path;  // zoo name or the .onnx path to load
  int repeat = 150, warmup = 1;
  uint64_t input_seed = 0;
  int64_t accuracy_limit = 10000;  // with variant.dataset: test images scored (0: all)
  // With variant.dataset: [preprocess]'s flags, over the model's metadata and the dataset's
  // default (variant.preprocess is their text).
  PreprocessFlags preprocess;
  // A tuned schedule: when set, every tuning record measured is written here (JSON Lines,
  // `dlas bench --records` reads them).
  std::string records_out;
  // With a dataset: false measures latency only (the model is still built, calibrated and
  // preprocessed for the dataset).
  bool score = true;
  // The untuned schedule with these tuning records applied (a tuned variant timed again).
  std::string records_in;
};
// Child side: applies the fault switch, builds and measures the variant, returns the
// measured columns (latency statistics, memory, params, MACs, compile time; with a dataset
// top-1/top-5 of the timed plan on the test split).
Row measure_variant(const MeasureRequest& request);
// Child side of `dlas explore`'s accuracy estimates: the deployed variant (request.variant,
// which names its dataset; with `records_file` the tuned layer choices of those records)
// scores exactly the given records of the test split, in order. Latency is not measured.
struct ScoreResult {
  std::vector<uint8_t> hits;  // per record: bit 0 top-1 correct, bit 1 top-5 correct
  double seconds = 0;         // the scoring's time
};
ScoreResult score_variant(const MeasureRequest& request, const std::vector<int64_t>& records,
                          const std::string& records_file = "");
// The flags that make `dlas study exec-variant` run `request` (after argv[0..2]).
std::vector<std::string> exec_variant_args(const MeasureRequest& request);

// --- the runner --------------------------------------------------------------
struct RunOptions {
  std::string db_path;
  std::string exe;        // the dlas binary the children run (/proc/self/exe in the CLI)
  double timeout_s = -1;  // per variant; < 0: the spec's [study].timeout; 0: none
  Shard shard;            // which slice of the expansion to run
  bool dry_run = false;   // plan only: nothing measured, the store not created
  std::string lock_path;  // empty: $DLAS_MEASURE_LOCK or /tmp/dlas-measure.lock
  // [study] calibrate: what measures a missing machine profile; empty: dlas::calibrate (the
  // built-in shapes and their int8 twins, under a minute a profile). Tests pass one over a
  // tiny shape list.
  std::function<CalibrateResult(const CalibrateOptions&)> calibrate;
};

// One machine profile the [study] calibrate step looked at: an (ISA path, threads) pair the
// dlas variants of this run need, and its file in the calibration cache.
struct ProfileCalibration {
  enum Status {
    kPresent,     // the file was there: not re-measured
    kCalibrated,  // measured and written by this run
    kPlanned,     // dry run: would be measured
  };
  std::string isa;  // the ISA path's name
  int threads = 1;
  std::string path;  // default_profile_path(isa, threads)
  Status status = kPresent;
  double seconds = 0;  // kCalibrated: the calibration's time
};

// One planned variant and, once run, its stored row.
struct PlannedVariant {
  StudyPoint point;
  Variant variant;
  std::string variant_id;   // variant.str()
  bool already_ok = false;  // stored ok for this hardware before the run: not rerun
};

struct RunEvent {
  enum Kind { kPlanned, kStart, kDone } kind;
  const std::vector<PlannedVariant>* plan = nullptr;  // kPlanned
  size_t index = 0;                         // position among the variants to run (kStart, kDone)
  size_t total = 0;                         // variants to run
  const PlannedVariant* variant = nullptr;  // kStart, kDone
  const Row* row = nullptr;                 // kDone: what was stored
};
using RunListener = std::function<void(const RunEvent&)>;

struct RunSummary {
  std::string hardware_id;
  Shard shard;
  size_t expanded = 0;  // points after exclusions and collapsing
  size_t excluded = 0, collapsed = 0;
  size_t in_shard = 0;    // of those, this shard's
  size_t already_ok = 0;  // of those, stored ok before: skipped
  size_t ran = 0;         // variants run (or that would run, with dry_run)
  size_t ok = 0, failed = 0, timeout = 0, crashed = 0, skipped = 0, unsupported = 0;
  std::vector<PlannedVariant> plan;  // this shard's variants, in order
  // [study] calibrate: the profiles the dlas variants to run need, in order of first use
  // (empty without calibrate, with nothing to run, or when skipped).
  std::vector<ProfileCalibration> calibrations;
  std::string calibration_skipped;  // why the calibrate step did nothing ("" when it ran)
};

// Runs (or with dry_run plans) the study. Throws kInvalidInput for a bad database;
// a failing variant is a row, never an exception.
//
// With spec.calibrate, before its first variant the run makes sure a machine profile exists
// for every (ISA path, threads) its own dlas variants run with -- this shard's variants not
// stored ok and runnable here, "native" and threads 0 resolved as for the variant ids: each
// pair whose default_profile_path is missing is calibrated (options.calibrate) and saved
// there, one stderr line each; pairs with a file are not re-measured (one line). Every
// calibration holds the measurement lock, and the file is looked for again once the lock is
// held, so shards and MPI ranks on one machine calibrate a pair once between them. A dry run
// lists what it would calibrate. $DLAS_PROFILE (a path or "none") overrides the cache for the
// variants, so then the step is skipped with one line. No cache folder (XDG_CACHE_HOME and
// HOME unset) is kInvalidInput; a failing calibration stops the run with its error.
RunSummary run_study(const StudySpec& spec, const RunOptions& options,
                     const RunListener& listener = {});

// The listener the CLI uses: on a TTY a bar with ETA and the current variant,
// otherwise one plain line per variant (both on stderr).
RunListener progress_printer(bool tty);

}  // namespace dlas::study

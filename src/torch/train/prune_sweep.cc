// The iterative prune-and-fine-tune sweep (dlas/torch/prune_sweep_run.h): prune the previous
// level's fine-tuned model further, fine-tune it for its share of the epochs, measure it in the
// dlas engine, and find the elbow. No torch header here (the Trainer hides libtorch); it lives
// in src/torch/train/ because it links the Trainer.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <set>
#include <sstream>

#include "dlas/core/error.h"
#include "dlas/core/file.h"
#include "dlas/model/onnx.h"
#include "dlas/model/op_schema.h"
#include "dlas/optimize/quantize.h"
#include "dlas/system/accuracy.h"
#include "dlas/system/loader.h"
#include "dlas/system/preprocess_meta.h"
#include "dlas/torch/prune_sweep_run.h"

namespace dlas {
namespace {

using Clock = std::chrono::steady_clock;
namespace fs = std::filesystem;

double seconds_since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

// The graph with image batch b when its ops allow it (else as it is).
Graph rebatched(const Graph& graph, int64_t b) {
  Graph g = graph;
  if (g.inputs[0].shape[0] == b) return g;
  g.inputs[0].shape[0] = b;
  try {
    g.infer();
    return g;
  } catch (const Error&) {
    return graph;
  }
}

std::string pct(double f) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f%%", 100 * f);
  return buf;
}

std::string secs(double s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f s", s);
  return buf;
}

// fp16, int8:none and int8:<calibrator>: the quantized accuracies of the baseline and elbow.
constexpr size_t kQuantVariants = 3;

struct Sweeper {
  const PruneSweepOptions& o;
  SweepResult r;
  std::unique_ptr<data::Dataset> train, test;
  data::Preprocess train_pre, test_pre;
  int64_t steps_per_epoch = 0;

  bool stopped() const { return o.stop && o.stop->load(); }
  void line(const std::string& s) const {
    if (o.on_line) o.on_line(s);
  }

  data::Accuracy accuracy(const Graph& g) const {
    return engine_accuracy(g, *test, test_pre, o.eval_batch, std::max(1, o.train.threads),
                           o.test_limit);
  }

  // Measures one point's graph-level numbers and engine accuracy (top1/top5).
  void describe(SweepPoint& p, const Graph& g) const {
    p.params = g.param_count();
    p.nonzero_params = g.nonzero_param_count();
    const Graph one = rebatched(g, 1);
    p.macs = one.inputs[0].shape[0] == 1 ? one.macs() : g.macs() / g.inputs[0].shape[0];
    const data::Accuracy a = accuracy(g);
    p.top1 = a.top1_rate();
    p.top5 = a.top5_rate();
  }

  // fp16, int8 uncalibrated and int8 calibrated on training images (as `dlas eval` does).
  std::vector<SweepQuant> quant(const Graph& fp32) const {
    std::vector<SweepQuant> out;
    for (const std::string& c :
         {std::string("fp16"), std::string("int8:none"), "int8:" + o.calibrator}) {
      if (stopped()) break;
      Graph g = rebatched(fp32, o.eval_batch);
      const std::string spec = apply_compress_for_dataset(g, parse_compress(c), o.dataset);
      const data::Accuracy a = accuracy(g);
      out.push_back({spec, a.top1_rate(), a.top5_rate()});
    }
    return out;
  }

  void write() {
    r.elbow = find_elbow(r.points, r.baseline.top1, r.tolerance);
    write_file_atomic(o.dir / "curve.csv", sweep_curve_csv(r));
    write_sweep(o.dir / "sweep.json", r);
  }
};

void check_shapes(const Graph& g, const std::string& name, const data::DatasetInfo& info,
                  const std::vector<int64_t>& chw) {
  const Shape& in = image_input_shape(g);
  DLAS_CHECK(in[1] == chw.at(0) && in[2] == chw.at(1) && in[3] == chw.at(2),
             ErrorKind::kInvalidInput, "model '", name, "' takes ", shape_str(in),
             " images, dataset '", info.name, "' gives ", chw[0], "x", chw[1], "x", chw[2],
             " (train it for this dataset with `dlas train`)");
  DLAS_CHECK(!g.outputs.empty(), ErrorKind::kInvalidInput, "model '", name, "' has no output");
  const Shape& out = g.value(g.outputs[0]).shape;
  DLAS_CHECK(out.size() == 2 && out[1] == info.classes, ErrorKind::kInvalidInput, "model '", name,
             "' gives ", shape_str(out), " logits, dataset '", info.name, "' has ", info.classes,
             " classes");
}

}  // namespace

PruneSpec channel_step_spec(int64_t original, int64_t remaining, double level) {
  DLAS_CHECK(original > 0 && remaining > 0 && remaining <= original && level >= 0 && level < 1,
             ErrorKind::kInvalidInput, "channel step: bad counts (original ", original,
             ", remaining ", remaining, ", level ", level, ")");
  const int64_t target = std::max<int64_t>(1, original - std::llround(level * original));
  const int64_t remove = std::clamp<int64_t>(remaining - target, 0, remaining - 1);
  PruneSpec s;
  s.method = PruneMethod::kChannel;
  // prune() removes round(S * remaining): S sits exactly on the count (a half step above
  // rounding error keeps it there).
  s.sparsity = static_cast<double>(remove) / static_cast<double>(remaining);
  return s;
}

std::string sweep_model_file(PruneMethod method, double level) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.2f", level);
  if (std::abs(std::stod(buf) - level) > 1e-9) std::snprintf(buf, sizeof buf, "%.6g", level);
  return str(sweep_method_name(method), "-", buf, ".onnx");
}

std::string sweep_curve_csv(const SweepResult& r) {
  std::ostringstream os;
  os.precision(10);
  os << "level,spec,achieved,top1_pruned,top1,top5,params,nonzero_params,macs,"
        "finetune_epochs,finetune_seconds,model\n";
  auto row = [&](const SweepPoint& p) {
    os << p.level << ',' << p.spec << ',' << p.achieved << ',' << p.top1_pruned << ',' << p.top1
       << ',' << p.top5 << ',' << p.params << ',' << p.nonzero_params << ',' << p.macs << ','
       << p.finetune_epochs << ',' << p.finetune_seconds << ',' << p.model << '\n';
  };
  row(r.baseline);
  for (const SweepPoint& p : r.points) row(p);
  return os.str();
}

namespace {

std::string exact(double v) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

// Refuses to resume a sweep made with other settings, naming the first that differs.
void check_resumable(const SweepResult& old, const std::map<std::string, std::string>& now,
                     const std::string& file) {
  DLAS_CHECK(!old.settings.empty(), ErrorKind::kInvalidInput, file,
             ": records no settings (written by an older dlas), so it cannot be resumed; "
             "start again without --resume (--force)");
  for (const auto& [key, value] : now) {
    auto it = old.settings.find(key);
    DLAS_CHECK(it != old.settings.end(), ErrorKind::kInvalidInput, file, ": records no setting '",
               key, "' (this run has ", value, "): cannot resume");
    DLAS_CHECK(it->second == value, ErrorKind::kInvalidInput, file, ": the sweep was made with ",
               key, " ", it->second, ", this run has ", key, " ", value,
               " (--resume needs the same settings)");
  }
  for (const auto& [key, value] : old.settings) {
    DLAS_CHECK(now.count(key) != 0, ErrorKind::kInvalidInput, file, ": the sweep was made with ",
               key, " ", value, ", this run has no ", key, " (--resume needs the same settings)");
  }
}

}  // namespace

std::map<std::string, std::string> sweep_settings(const PruneSweepOptions& o) {
  const std::vector<double> levels = o.levels.empty() ? default_sweep_levels(o.method) : o.levels;
  std::string lv;
  for (double l : levels) lv += (lv.empty() ? "" : ",") + exact(l);
  std::map<std::string, std::string> s = o.settings;
  s["model"] = o.model;
  s["dataset"] = o.dataset;
  s["method"] = sweep_method_name(o.method);
  s["levels"] = lv;
  s["epochs"] = exact(o.epochs);
  s["lr"] = exact(o.train.lr);
  s["schedule"] = lr_schedule_name(o.train.schedule);
  s["batch"] = std::to_string(o.train.batch);
  s["limit"] = std::to_string(o.train.limit);
  s["no-augment"] = o.train.augment ? "false" : "true";
  s["seed"] = std::to_string(o.train.seed);
  s["label-smoothing"] = exact(o.train.label_smoothing);
  s["test-limit"] = std::to_string(o.test_limit);
  s["eval-batch"] = std::to_string(o.eval_batch);
  s["tolerance"] = exact(o.tolerance);
  s["calibrator"] = o.calibrator;
  s["quant"] = o.quant ? "true" : "false";
  return s;
}

namespace {

// The sweep's levels (the method's defaults when none are given), checked with the other
// options.
std::vector<double> checked_levels(const PruneSweepOptions& opts) {
  const std::vector<double> levels =
      opts.levels.empty() ? default_sweep_levels(opts.method) : opts.levels;
  DLAS_CHECK(opts.method != PruneMethod::kBlock, ErrorKind::kInvalidInput,
             "prune sweeps take weight or channel pruning, not block pruning");
  for (size_t i = 0; i < levels.size(); ++i) {
    DLAS_CHECK(levels[i] > 0 && levels[i] < 1, ErrorKind::kInvalidInput, "level ", levels[i],
               " is outside (0, 1)");
    DLAS_CHECK(i == 0 || levels[i] > levels[i - 1], ErrorKind::kInvalidInput,
               "levels must be ascending (", levels[i - 1], " then ", levels[i], ")");
  }
  DLAS_CHECK(opts.epochs >= 0 && std::isfinite(opts.epochs), ErrorKind::kInvalidInput,
             "fine-tuning epochs must be >= 0");
  DLAS_CHECK(!opts.dir.empty(), ErrorKind::kInvalidInput, "the sweep needs an output directory");
  return levels;
}

// resume: the sweep so far, made with the same settings and levels, its models present.
SweepResult read_resumable(const PruneSweepOptions& opts, const std::vector<double>& levels,
                           const std::map<std::string, std::string>& settings) {
  const fs::path file = opts.dir / "sweep.json";
  DLAS_CHECK(fs::is_regular_file(file), ErrorKind::kInvalidInput, file.string(),
             ": not found: there is no sweep to resume in ", opts.dir.string());
  SweepResult resumed = read_sweep(file);
  check_resumable(resumed, settings, file.string());
  DLAS_CHECK(resumed.points.size() <= levels.size(), ErrorKind::kInvalidInput, file.string(),
             ": has more points than levels");
  for (size_t i = 0; i < resumed.points.size(); ++i) {
    DLAS_CHECK(resumed.points[i].level == levels[i], ErrorKind::kInvalidInput, file.string(),
               ": point ", i, " is level ", resumed.points[i].level, ", not ", levels[i]);
  }
  for (const SweepPoint* p :
       {&resumed.baseline, resumed.points.empty() ? nullptr : &resumed.points.back()}) {
    if (p == nullptr) continue;
    DLAS_CHECK(fs::is_regular_file(opts.dir / p->model), ErrorKind::kInvalidInput,
               (opts.dir / p->model).string(), ": missing (sweep.json names it): cannot resume");
  }
  return resumed;
}

// Opens the dataset's splits and checks the baseline against them.
void open_data(Sweeper& s, const Graph& baseline) {
  const PruneSweepOptions& o = s.o;
  s.train = data::open_dataset(o.dataset, data::Split::kTrain);
  s.test = data::open_dataset(o.dataset, data::Split::kTest);
  const data::DatasetInfo& info = s.train->info();
  // The preprocessing the baseline carries (the CLI stores the flags' there), else the
  // dataset's default; the levels' models inherit the baseline's metadata.
  const std::string name = o.model.empty() ? baseline.name : o.model;
  s.train_pre = data::default_preprocess(info, /*train=*/true);
  s.test_pre = data::default_preprocess(s.test->info(), /*train=*/false);
  if (preprocess_from_metadata(baseline, name)) {  // (bad metadata fails here, named)
    const std::string& text = *baseline.metadata_value(kPreprocessKey);
    s.train_pre = data::preprocess_from_json(text, s.train_pre);
    s.test_pre = data::preprocess_from_json(text, s.test_pre);
  }
  check_shapes(baseline, o.model.empty() ? baseline.name : o.model, info,
               s.test_pre.output_shape(s.test->info()));
  {
    data::Loader probe(*s.train, s.train_pre,
                       {.batch = o.train.batch, .drop_last = true, .limit = o.train.limit});
    s.steps_per_epoch = probe.batches_per_epoch();
  }
  DLAS_CHECK(s.steps_per_epoch > 0, ErrorKind::kInvalidInput, "dataset '", o.dataset,
             "': fewer training records than one batch (", o.train.batch, ")");
}

// The baseline point (measured, or taken from the sweep being resumed) and its quantized
// accuracies (again when an interrupted run left them incomplete); writes the sweep so far.
void start_sweep(Sweeper& s, const Graph& current, const SweepResult* resumed, int64_t nlev) {
  const PruneSweepOptions& o = s.o;
  SweepResult& r = s.r;
  r.model = o.model;
  r.dataset = o.dataset;
  r.method = o.method;
  r.tolerance = o.tolerance;
  r.total_finetune_epochs = o.epochs;
  if (!resumed) {
    SweepPoint& b = r.baseline;
    b.level = 0;
    b.spec = "dense";
    b.achieved = o.method == PruneMethod::kWeight ? describe_weights(current).sparsity() : 0.0;
    s.describe(b, current);
    b.top1_pruned = b.top1;
    b.model = "baseline.onnx";
    export_onnx_file(current, (o.dir / b.model).string());
    data::Loader count(*s.test, s.test_pre, {.batch = o.eval_batch, .limit = o.test_limit});
    r.test_samples = count.samples();
    s.line(str("baseline: top-1 ", pct(b.top1), ", top-5 ", pct(b.top5), ", ", b.params,
               " params, ", b.macs, " MACs (", r.test_samples, " test images, dlas engine)"));
  } else {
    r.baseline = resumed->baseline;
    r.test_samples = resumed->test_samples;
    r.baseline_quant = resumed->baseline_quant;
    r.points = resumed->points;
    s.line(str("resuming ", (o.dir / "sweep.json").string(), ": ", r.points.size(), " of ", nlev,
               " levels done"));
  }
  if (o.quant && !s.stopped() && r.baseline_quant.size() < kQuantVariants) {
    r.baseline_quant = s.quant(current);
    std::string q;
    for (const SweepQuant& x : r.baseline_quant) q += str("  ", x.compress, " ", pct(x.top1));
    s.line("baseline quantized:" + q);
  }
  s.write();
}

// Channel pruning counts against the baseline's prunable channels; a resumed sweep's last
// level left round(achieved x original) of them removed.
struct ChannelCount {
  int64_t original = 0, remaining = 0;
};
ChannelCount count_channels(const Sweeper& s, const Graph& baseline) {
  ChannelCount n;
  if (s.o.method != PruneMethod::kChannel) return n;
  Graph probe = baseline;
  PruneSpec none;
  none.method = PruneMethod::kChannel;
  n.original = n.remaining = prune(probe, none).prunable_channels;
  DLAS_CHECK(n.original > 0, ErrorKind::kInvalidInput, "model '", s.o.model,
             "' has no prunable channel groups");
  if (!s.r.points.empty())
    n.remaining =
        n.original - std::llround(s.r.points.back().achieved * static_cast<double>(n.original));
  return n;
}

// `current` pruned to `level` (the previous level's fine-tuned model, pruned further); sets
// the point's spec, the level's spec relative to the original model.
Graph prune_further(const Sweeper& s, const Graph& current, double level, ChannelCount& channels,
                    SweepPoint& p) {
  Graph pruned = current;
  PruneSpec named;
  named.method = s.o.method;
  named.sparsity = level;
  if (s.o.method == PruneMethod::kWeight) {
    prune(pruned, named);
  } else {
    const PruneSpec step = channel_step_spec(channels.original, channels.remaining, level);
    const PruneReport rep = prune(pruned, step);
    channels.remaining = rep.prunable_channels - rep.pruned_channels;
  }
  p.spec = named.str();
  return pruned;
}

// Fine-tunes `pruned` for level i's `steps`; false when stopped.
bool finetune(const Sweeper& s, Graph& pruned, int64_t i, int64_t steps, SweepPoint& p) {
  const PruneSweepOptions& o = s.o;
  const auto t0 = Clock::now();
  if (steps > 0) {
    TrainOptions t = o.train;
    t.epochs = static_cast<int>((steps + s.steps_per_epoch - 1) / s.steps_per_epoch);
    t.max_steps = steps;
    t.seed = o.train.seed + 1 + static_cast<uint64_t>(i);
    t.preprocess = s.train_pre;
    t.masks_from_zeros = o.method == PruneMethod::kWeight;
    t.masks.clear();
    t.checkpoint.clear();
    t.resume = false;
    t.stop = o.stop;
    Trainer trainer(pruned, t);
    const TrainResult tr = trainer.fit(*s.train);
    if (tr.stopped || s.stopped()) return false;
    pruned = trainer.graph();
  }
  p.finetune_seconds = seconds_since(t0);
  p.finetune_epochs = static_cast<double>(steps) / static_cast<double>(s.steps_per_epoch);
  return true;
}

// One level: prune, measure, fine-tune, measure, save. False when stopped (the level is
// then not recorded); else `current` is the level's fine-tuned model.
bool run_level(Sweeper& s, Graph& current, int64_t i, int64_t nlev, double level, int64_t steps,
               ChannelCount& channels) {
  const PruneSweepOptions& o = s.o;
  SweepPoint p;
  p.level = level;
  Graph pruned = prune_further(s, current, level, channels, p);
  p.top1_pruned = s.accuracy(pruned).top1_rate();
  if (s.stopped() || !finetune(s, pruned, i, steps, p)) return false;
  p.achieved = o.method == PruneMethod::kWeight
                   ? describe_weights(pruned).sparsity()
                   : static_cast<double>(channels.original - channels.remaining) /
                         static_cast<double>(channels.original);
  s.describe(p, pruned);
  if (s.stopped()) return false;
  p.model = sweep_model_file(o.method, level);
  export_onnx_file(pruned, (o.dir / p.model).string());
  s.r.points.push_back(p);
  current = std::move(pruned);
  s.write();
  s.line(str("level ", i + 1, "/", nlev, " ", p.spec, ": achieved ", p.achieved, ", top-1 pruned ",
             pct(p.top1_pruned), " -> fine-tuned ", pct(p.top1), " (", p.finetune_epochs,
             " epochs, ", secs(p.finetune_seconds), "), ", p.nonzero_params, "/", p.params,
             " nonzero params, ", p.macs, " MACs"));
  return true;
}

// The elbow: its model copied to elbow.onnx and quantized like the baseline.
void finish_elbow(Sweeper& s, const PruneSweepRun& run) {
  const PruneSweepOptions& o = s.o;
  SweepResult& r = s.r;
  r.elbow = find_elbow(r.points, r.baseline.top1, r.tolerance);
  if (r.elbow >= 0) {
    const SweepPoint& e = r.points[static_cast<size_t>(r.elbow)];
    write_file_atomic_via(o.dir / "elbow.onnx", [&](const fs::path& tmp) {
      fs::copy_file(o.dir / e.model, tmp, fs::copy_options::overwrite_existing);
    });
    const Graph g = load_model((o.dir / e.model).string());
    if (o.quant && !run.stopped) r.elbow_quant = s.quant(g);
    s.line(str("elbow: ", e.spec, " (top-1 ", pct(e.top1), ", baseline ", pct(r.baseline.top1),
               ", tolerance ", pct(r.tolerance), ")"));
  } else {
    std::error_code ec;
    fs::remove(o.dir / "elbow.onnx", ec);
    s.line(str("elbow: none (no level within ", pct(r.tolerance), " of the baseline's top-1)"));
  }
  s.write();
}

}  // namespace

PruneSweepRun run_prune_sweep(const Graph& baseline, const PruneSweepOptions& opts) {
  const std::vector<double> levels = checked_levels(opts);
  const std::map<std::string, std::string> settings = sweep_settings(opts);
  SweepResult resumed;  // resume: the sweep so far
  if (opts.resume) resumed = read_resumable(opts, levels, settings);

  Sweeper s{opts, {}, nullptr, nullptr, {}, {}, 0};
  const PruneSweepOptions& o = opts;
  open_data(s, baseline);
  // Steps of each level: level i ends at round((i + 1) x T / L) of T = round(E x steps/epoch).
  const int64_t total_steps = std::llround(o.epochs * static_cast<double>(s.steps_per_epoch));
  const int64_t nlev = static_cast<int64_t>(levels.size());
  auto level_end = [&](int64_t i) {
    return nlev ? std::llround(static_cast<double>(total_steps) * static_cast<double>(i) /
                               static_cast<double>(nlev))
                : 0;
  };

  fs::create_directories(o.dir);
  s.r.settings = settings;
  Graph current = baseline;
  current.infer();
  start_sweep(s, current, o.resume ? &resumed : nullptr, nlev);
  ChannelCount channels = count_channels(s, current);
  if (!s.r.points.empty()) current = load_model((o.dir / s.r.points.back().model).string());
  for (int64_t i = static_cast<int64_t>(s.r.points.size()); i < nlev && !s.stopped(); ++i) {
    const int64_t steps = level_end(i + 1) - level_end(i);
    if (!run_level(s, current, i, nlev, levels[static_cast<size_t>(i)], steps, channels)) break;
  }
  PruneSweepRun run;
  run.stopped = s.stopped();
  finish_elbow(s, run);
  run.result = s.r;
  run.result.dir = o.dir;
  return run;
}

}  // namespace dlas

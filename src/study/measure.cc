// The child side of the runner: measure one variant and print its columns.
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <optional>
#include <sstream>
#include <utility>

#include "dlas/algo/knobs.h"
#include "dlas/algo/machine_profile.h"
#include "dlas/core/error.h"
#include "dlas/data/dataset.h"
#include "dlas/hw/gpu.h"
#include "dlas/hw/isa.h"
#include "dlas/model/op_schema.h"
#include "dlas/optimize/prune.h"
#include "dlas/optimize/quantize.h"
#include "dlas/study/runner.h"
#include "dlas/study/spec.h"
#include "dlas/system/accuracy.h"
#include "dlas/system/compress.h"
#include "dlas/system/cuda_tune.h"
#include "dlas/system/loader.h"
#include "dlas/system/make_executor.h"
#include "dlas/system/measure.h"
#include "dlas/system/peer_executor.h"
#include "dlas/system/preprocess_meta.h"
#include "dlas/system/tune.h"
#include "dlas/system/tune_model.h"

namespace dlas::study {
namespace {

// DLAS_STUDY_FAULT="crash:<substr>,hang:<substr>,fail:<substr>,oom:<substr>": test-only
// faults for variants whose canonical id contains <substr>, so the runner's handling of
// each kind of death can be tested without a real bug.
void apply_fault_switch(const std::string& variant_id) {
  const char* env = std::getenv("DLAS_STUDY_FAULT");
  if (!env || !*env) return;
  std::stringstream ss(env);
  std::string item;
  while (std::getline(ss, item, ',')) {
    const size_t colon = item.find(':');
    if (colon == std::string::npos) continue;
    const std::string kind = item.substr(0, colon), needle = item.substr(colon + 1);
    if (needle.empty() || variant_id.find(needle) == std::string::npos) continue;
    std::cerr << "DLAS_STUDY_FAULT: injecting '" << kind << "' into " << variant_id << std::endl;
    if (kind == "crash") {
      ::signal(SIGSEGV, SIG_DFL);
      ::raise(SIGSEGV);
    } else if (kind == "hang") {
      for (;;) ::pause();
    } else if (kind == "fail") {
      fail(ErrorKind::kRuntime, "injected failure (DLAS_STUDY_FAULT)");
    } else if (kind == "oom") {
      // What the kernel's OOM killer does: SIGKILL, no chance to say anything.
      ::raise(SIGKILL);
    }
  }
}

// With a dataset, zoo models are built for its preprocessed images and classes.
Graph load_for(const MeasureRequest& r, const data::DatasetInfo* info) {
  LoadOptions lo;
  lo.zoo.batch = r.variant.batch;
  if (info && find_zoo_model(r.model_path)) lo.zoo = zoo_options_for(*info, lo.zoo);
  if (find_zoo_model(r.model_path) || r.variant.batch == 1) return load_model(r.model_path, lo);
  // An ONNX file: its first input's leading dimension is the batch.
  const Graph probe = load_model(r.model_path, lo);
  DLAS_CHECK(!probe.inputs.empty() && !probe.inputs[0].shape.empty(), ErrorKind::kInvalidInput,
             r.model_path, ": batch ", r.variant.batch, " needs a first input with a batch dim");
  Shape s = probe.inputs[0].shape;
  s[0] = r.variant.batch;
  lo.onnx.input_shapes[probe.inputs[0].name] = s;
  return load_model(r.model_path, lo);
}

// A tuned variant: survey-tunes the conv layers of the variant's algorithm ("auto": every
// algorithm per layer) within the schedule's budget, returns the best choices and sets the
// tuning columns into `row`. The tuning seed is the input seed, so a rerun of the
// same study repeats the same search.
LayerChoices tune_variant(const MeasureRequest& r, const Graph& g, const PlanOptions& o, Row& row) {
  const std::string& s = r.variant.schedule;
  DLAS_CHECK(s.rfind("tuned:", 0) == 0, ErrorKind::kInvalidInput, "schedule '", s,
             "' is neither default nor tuned:<budget>");
  const tune::Budget budget = tune::parse_budget(std::string_view(s).substr(6));
  const std::string algo = parse_algo_choice(o.conv_algo).algo;
  const std::vector<tune::Task> tasks = tune::tasks_for_algorithm(tune::extract_tasks(g, o), algo);
  row.set("tuning_trials", int64_t{0});
  row.set("tuning_failures", int64_t{0});
  row.set("tuning_s", 0.0);
  if (tasks.empty()) {
    // Nothing of this algorithm to tune (e.g. winograd on an int8 model: no int8 twin). The
    // records file still exists, empty, so what applies it (explore's scoring, README's
    // reproduce command) runs the untuned choices instead of failing.
    row.set("tuning_stop", std::string("no-tasks"));
    if (!r.records_out.empty()) tune::write_records(r.records_out, {});
    return {};
  }
  tune::TuneOptions t;
  t.budget_seconds = budget.seconds;
  t.budget_trials = budget.trials;
  t.seed = r.input_seed;
  tune::ModelTimer timer(g, o);  // paired timings against the incumbent (tune_model.h)
  t.model_latency = [&](const LayerChoices& c) { return timer(c); };
  tune::MeasureOptions mo;
  mo.reuse_bytes = tune::model_reuse_bytes(g, o);  // the cache state inside the model
  auto measurer = tune::make_conv_measurer(mo);
  const tune::TuneReport rep = tune::tune(tasks, *measurer, t);
  if (rep.retime_failures > 0)
    std::cerr << "warning: " << rep.retime_failures
              << " whole-model timings failed while tuning and were left off the curve (first: "
              << rep.retime_error << ")" << std::endl;
  if (!r.records_out.empty()) {
    // The search's records, then the whole-model pick pinned (tune_model.h chosen_records).
    std::vector<tune::Record> out = rep.records;
    for (tune::Record& c : tune::chosen_records(g, o, tasks, rep, *measurer, t.timeout_seconds))
      out.push_back(std::move(c));
    tune::write_records(r.records_out, out);
  }
  row.set("tuning_s", rep.seconds);
  row.set("tuning_trials", rep.trials);
  row.set("tuning_failures", rep.failures);
  row.set("tuning_cold_share",
          rep.measure_seconds > 0 ? rep.cold_seconds / rep.measure_seconds : 0.0);
  row.set("tuning_stop", rep.stop_reason);
  std::cerr << "tuned " << tasks.size() << " tasks in " << rep.seconds << " s (" << rep.trials
            << " trials, stop: " << rep.stop_reason << "): " << rep.untuned_latency_s * 1e3
            << " -> " << rep.tuned_latency_s * 1e3 << " ms" << std::endl;
  return rep.choices;
}

// A tuned GPU variant: the GPU tuner (dlas/system/cuda_tune.h, `dlas tune --device cuda`)
// searches every CUDA algorithm of each conv layer within the schedule's budget; the variant
// runs, per layer, the fastest record of its own algorithm ("auto": of any algorithm), so
// each algorithm's row is that algorithm tuned. Sets the tuning columns into `row`.
LayerChoices tune_variant_gpu(const MeasureRequest& r, const Graph& g, Row& row) {
  const Variant& v = r.variant;
  const std::string& s = v.schedule;
  DLAS_CHECK(s.rfind("tuned:", 0) == 0, ErrorKind::kInvalidInput, "schedule '", s,
             "' is neither default nor tuned:<budget>");
  const tune::Budget budget = tune::parse_budget(std::string_view(s).substr(6));
  tune::CudaTuneOptions o;
  o.device = parse_device(v.device);
  o.opt_level = v.opt_level;
  o.budget_seconds = budget.seconds;
  o.budget_trials = budget.trials;
  o.seed = r.input_seed;
  const tune::CudaTuneReport rep = tune::tune_cuda(g, o);
  const std::string algo = parse_algo_choice(v.conv_algo).algo;
  std::vector<tune::Record> own;
  for (const tune::Record& rec : rep.records)
    if (algo == "auto" || rec.algo == algo) own.push_back(rec);
  if (!r.records_out.empty()) tune::write_records(r.records_out, own);
  const LayerChoices choices =
      algo == "auto" ? rep.choices : tune::apply_cuda_records(g, v.opt_level, o.device, own);
  const bool trials_out = budget.trials > 0 && rep.trials >= budget.trials;
  const bool seconds_out = budget.seconds > 0 && rep.seconds >= budget.seconds;
  row.set("tuning_s", rep.seconds);
  row.set("tuning_trials", rep.trials);
  row.set("tuning_failures", rep.failures);
  row.set("tuning_stop", std::string(trials_out    ? "trials"
                                     : seconds_out ? "seconds"
                                                   : "exhausted"));
  std::cerr << "tuned " << rep.layers << " GPU conv layers in " << rep.seconds << " s ("
            << rep.trials << " trials; " << choices.size() << " of " << rep.convs << " convs run "
            << algo << " tuned)" << std::endl;
  return choices;
}

void set_latency_columns(Row& row, const LatencyStats& s) {
  row.set("median_ms", s.median_ms);
  row.set("mean_ms", s.mean_ms);
  row.set("p10_ms", s.p10_ms);
  row.set("p90_ms", s.p90_ms);
  row.set("min_ms", s.min_ms);
  row.set("max_ms", s.max_ms);
  row.set("std_ms", s.std_ms);
  row.set("cv", s.cv);
  row.set("first_ms", s.first_ms);
}

// The buffers the executor can see (oneDNN's own are not: only its weights).
void set_memory_columns(Row& row, const MemoryReport& m) {
  const std::pair<const char*, int64_t> columns[] = {{"weight_bytes", m.weight_bytes},
                                                     {"packed_weight_bytes", m.packed_weight_bytes},
                                                     {"peak_activation_bytes", m.arena_bytes},
                                                     {"workspace_bytes", m.workspace_bytes}};
  for (const auto& [name, bytes] : columns)
    if (bytes != kUnknownBytes) row.set(name, bytes);
}

// The variant's model as it is deployed: loaded (built for the dataset), its preprocessing
// resolved, compressed. Sets the parameter columns into `row`.
struct PreparedModel {
  std::unique_ptr<data::Dataset> test_set;  // with a dataset
  Graph graph;
  std::optional<data::Preprocess> pre;  // with a dataset
};

PreparedModel prepare_model(const MeasureRequest& r, Row& row) {
  const Variant& v = r.variant;
  PreparedModel m;
  if (!v.dataset.empty()) m.test_set = data::open_dataset(v.dataset, data::Split::kTest);
  m.graph = load_for(r, m.test_set ? &m.test_set->info() : nullptr);
  Graph& g = m.graph;
  // The preprocessing the model carries (its metadata), else the dataset's default: what the
  // accuracy run and int8 calibration feed it (dlas/system/preprocess_meta.h).
  if (m.test_set) {
    m.pre = resolve_preprocess(m.test_set->info(), r.preprocess, &g, v.model).pre;
    // int8 calibration reads the model's metadata, as after `dlas eval`'s flags.
    if (r.preprocess.any()) set_preprocess_metadata(g, *m.pre);
  }
  // Compression is applied to the loaded model: pruning first (pruned weights stay dense
  // tensors with zeros; the sparse algorithms encode them at prepare), then quantization
  // (int8 calibrated on random inputs -- on training images with a dataset, as `dlas eval`
  // does --, fp16 / bf16 conversion), as `--compress` does. An elbow level deploys the
  // sweep's fine-tuned model (deployed_compress says what is still to apply to it).
  CompressSpec cs = parse_compress(deployed_compress(v.compress));
  std::optional<QuantSpec> quant = cs.quant;
  cs.quant.reset();
  apply_compress_spec(g, cs);
  // Parameters before quantization: int8 stores the same parameters in 8 bits.
  row.set("params", g.param_count());
  row.set("nonzero_params", g.nonzero_param_count());
  if (quant) {
    CompressSpec qs;
    qs.quant = quant;
    if (m.test_set)
      apply_compress_for_dataset(g, qs, v.dataset);
    else
      apply_compress_spec(g, qs, v.threads);
  }
  return m;
}

}  // namespace

namespace {

Row measure_variant_here(const MeasureRequest& r) {
  const Variant& v = r.variant;
  const std::string id = v.str();
  apply_fault_switch(id);
  Row row;
  PreparedModel m = prepare_model(r, row);
  Graph& g = m.graph;
  const std::unique_ptr<data::Dataset>& test_set = m.test_set;
  const std::optional<data::Preprocess>& pre = m.pre;
  const bool cpu = v.device == "cpu";

  // The plan and the tuner run at the variant's ISA path (plan_options_for carries it; the
  // process-wide setting covers code that defaults to it); other backends and the GPU
  // dispatch on their own.
  if (v.backend == "dlas" && cpu) set_active_isa(parse_isa(v.isa));
  ExecutorOptions eo;
  if (v.schedule != "default")
    eo.layers = cpu ? tune_variant(r, g, plan_options_for(v), row) : tune_variant_gpu(r, g, row);
  if (!r.records_in.empty())
    eo.layers =
        cpu ? tune::apply_records(g, plan_options_for(v), tune::read_records(r.records_in)).layers
            : tune::apply_cuda_records(g, v.opt_level, parse_device(v.device),
                                       tune::read_records(r.records_in));
  auto t0 = std::chrono::steady_clock::now();  // compile_ms is the executor's own, tuning aside
  std::unique_ptr<Executor> exec;
  try {
    exec = make_executor(g, v, eo);
  } catch (const Error& e) {
    // A peer that is not installed or cannot run this model: a row that says so.
    if (!is_peer_backend(v.backend) || e.kind() != ErrorKind::kUnsupported) throw;
    row.set("status", std::string(kStatusUnsupported));
    row.set("reason", std::string(e.what()));
    return row;
  }
  double compile_ms = ms_since(t0);
  if (const auto* peer = dynamic_cast<const PeerExecutor*>(exec.get())) {
    // The peer's own compile (its process start-up and imports aside) and tuning.
    compile_ms = peer->compile_ms();
    if (v.backend == "tvm-tuned") {
      row.set("tuning_s", peer->tune_ms() / 1e3);
      row.set("tuning_trials", int64_t{peer->tune_trials()});
      row.set("tuning_stop", std::string("trials"));
    }
  }
  // The parent keyed the row by what it expected to run; make sure that is what runs.
  DLAS_CHECK(exec->threads() == v.threads, ErrorKind::kInternal, exec->name(), " runs ",
             exec->threads(), " threads, not the variant's ", id);
  // The machine profile the plan followed (the plan's own lookup: its option, $DLAS_PROFILE,
  // the calibration cache): its file, "builtin:<name>", or "none" for the built-in rule.
  if (v.backend == "dlas" && cpu) {
    const std::string used =
        active_machine_profile(plan_options_for(v, eo).profile, parse_isa(v.isa), v.threads).path;
    row.set("profile", used.empty() ? std::string("none") : used);
  }

  LatencyOptions lo;
  lo.warmup = r.warmup;
  lo.repeat = r.repeat;
  const LatencyStats st = measure_latency(*exec, random_inputs(g, r.input_seed), lo);
  set_latency_columns(row, st);
  row.set("compile_ms", compile_ms);
  row.set("macs", exec->macs());
  set_memory_columns(row, exec->memory());
  // Accuracy of the deployed variant: the executor just timed scores the first `limit` test
  // images (the model's batch; a short last batch is zero-padded and not counted).
  if (test_set && r.score) {
    const Shape& input = image_input_shape(exec->graph());
    data::check_preprocess_for_input(*pre, test_set->info(), input);
    data::Loader loader(*test_set, *pre, {.batch = input[0], .limit = r.accuracy_limit});
    t0 = std::chrono::steady_clock::now();
    const data::Accuracy acc = evaluate_executors({exec.get()}, loader)[0];
    const std::string chance = chance_level_warning(acc.top1_rate(), test_set->info().classes);
    if (!chance.empty()) std::fprintf(stderr, "study: %s: %s\n", v.model.c_str(), chance.c_str());
    row.set("accuracy", acc.top1_rate());
    row.set("top5", acc.top5_rate());
    row.set("accuracy_samples", acc.samples);
    row.set("accuracy_s", ms_since(t0) / 1e3);
  }
  return row;
}

}  // namespace

Row measure_variant(const MeasureRequest& r) {
  if (r.variant.device == "cpu") return measure_variant_here(r);
  // A GPU variant this machine or build cannot run (no such GPU, no CUDA, an op without a
  // CUDA kernel): a row that says so, as for a peer that is not installed.
  try {
    return measure_variant_here(r);
  } catch (const Error& e) {
    if (e.kind() != ErrorKind::kUnsupported) throw;
    Row row;
    row.set("status", std::string(kStatusUnsupported));
    row.set("reason", std::string(e.what()));
    return row;
  }
}

ScoreResult score_variant(const MeasureRequest& r, const std::vector<int64_t>& records,
                          const std::string& records_file) {
  const Variant& v = r.variant;
  apply_fault_switch(v.str());
  DLAS_CHECK(!v.dataset.empty(), ErrorKind::kUsage, "scoring a variant needs its dataset");
  Row row;
  PreparedModel m = prepare_model(r, row);
  if (v.backend == "dlas" && v.device == "cpu") set_active_isa(parse_isa(v.isa));
  ExecutorOptions eo;
  if (!records_file.empty())
    eo.layers =
        tune::apply_records(m.graph, plan_options_for(v), tune::read_records(records_file)).layers;
  const std::unique_ptr<Executor> exec = make_executor(m.graph, v, eo);
  const Shape& input = image_input_shape(exec->graph());
  data::check_preprocess_for_input(*m.pre, m.test_set->info(), input);
  data::Loader loader(*m.test_set, *m.pre, {.batch = input[0], .records = records});
  const auto t0 = std::chrono::steady_clock::now();
  ScoreResult out;
  out.hits = evaluate_executors({exec.get()}, loader, {}, /*keep_hits=*/true)[0].hits;
  out.seconds = ms_since(t0) / 1e3;
  return out;
}

std::vector<std::string> exec_variant_args(const MeasureRequest& r) {
  const Variant& v = r.variant;
  std::vector<std::string> args = {"--model",      v.model,
                                   "--model-path", r.model_path,
                                   "--batch",      std::to_string(v.batch),
                                   "--compress",   v.compress,
                                   "--backend",    v.backend,
                                   "--device",     v.device,
                                   "--conv-algo",  v.conv_algo,
                                   "--layout",     v.layout,
                                   "--opt-level",  std::to_string(v.opt_level),
                                   "--isa",        v.isa,
                                   "--threads",    std::to_string(v.threads),
                                   "--schedule",   v.schedule,
                                   "--repeat",     std::to_string(r.repeat),
                                   "--warmup",     std::to_string(r.warmup),
                                   "--input-seed", std::to_string(r.input_seed)};
  if (!v.dataset.empty()) {
    for (std::string a : {std::string("--dataset"), v.dataset, std::string("--accuracy-limit"),
                          std::to_string(r.accuracy_limit)})
      args.push_back(std::move(a));
    for (std::string& a : r.preprocess.to_args()) args.push_back(std::move(a));
  }
  if (!r.records_out.empty()) {
    args.push_back("--records-out");
    args.push_back(r.records_out);
  }
  if (!r.records_in.empty()) {
    args.push_back("--records-in");
    args.push_back(r.records_in);
  }
  if (!r.score) args.push_back("--no-score");
  return args;
}

}  // namespace dlas::study

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <new>
#include <optional>
#include <random>
#include <sstream>

#include "cli.h"
#include "dlas/algo/conv.h"
#include "dlas/algo/machine_profile.h"
#include "dlas/core/progress.h"
#include "dlas/hw/gpu.h"
#include "dlas/hw/isa.h"
#include "dlas/optimize/prune.h"
#include "dlas/optimize/quantize.h"
#include "dlas/system/compress.h"
#include "dlas/system/cuda_executor.h"
#include "dlas/system/cuda_tune.h"
#include "dlas/system/make_executor.h"
#include "dlas/system/tune.h"

namespace dlas::cli {

std::string with_commas(int64_t v) {
  std::string s = std::to_string(v < 0 ? -v : v);
  for (int i = static_cast<int>(s.size()) - 3; i > 0; i -= 3) s.insert(static_cast<size_t>(i), ",");
  return v < 0 ? "-" + s : s;
}

std::vector<std::string> reference_steps(const Executor& e) {
  std::vector<std::string> out;
  if (const auto* plan = dynamic_cast<const Plan*>(&e))
    for (const StepInfo& s : plan->steps())
      if (s.kernel == "reference") out.push_back(s.node + " (" + s.op + ")");
  return out;
}

std::string device_name(const Executor& e) {
  if (const auto* cuda = dynamic_cast<const CudaExecutor*>(&e)) return cuda->device_label();
  return "cpu";
}

std::string reference_steps_line(const std::vector<std::string>& steps) {
  if (steps.empty()) return {};
  std::string line = std::to_string(steps.size()) +
                     (steps.size() == 1 ? " step runs" : " steps run") +
                     " on a reference kernel (no fast path, often 10-100x slower): ";
  for (size_t i = 0; i < steps.size() && i < 3; ++i) line += (i ? ", " : "") + steps[i];
  if (steps.size() > 3) line += ", and " + std::to_string(steps.size() - 3) + " more";
  return line;
}

std::string short_name(const std::string& name, size_t width) {
  return name.size() > width ? "..." + name.substr(name.size() - (width - 3)) : name;
}

void add_model_args(CLI::App& cmd, ModelArgs& a) {
  cmd.add_option("MODEL", a.model, "zoo name (see `dlas zoo`) or path to an .onnx file")
      ->required();
  cmd.add_option("--input-shape", a.input_shapes,
                 "ONNX: static shape for an input, NAME=1x3x224x224 (or just 1x3x224x224 for the "
                 "first input); repeatable");
  cmd.add_option("--batch", a.batch, "zoo: batch size")
      ->check(CLI::Range(int64_t{1}, int64_t{4096}));
  cmd.add_option("--in-channels", a.in_channels, "zoo: input channels (default: the model's)");
  cmd.add_option("--image-size", a.image_size, "zoo: input height = width (default: the model's)");
  cmd.add_option("--classes", a.num_classes, "zoo: number of classes (default: the model's)");
  cmd.add_option("--width-mult", a.width_mult, "zoo: channel width multiplier");
  cmd.add_option("--seed", a.seed, "zoo: weight initialisation seed");
}

namespace {
Shape parse_dims(const std::string& text, const std::string& flag) {
  Shape s;
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, 'x')) {
    DLAS_CHECK(
        !item.empty() && item.size() <= 12 &&
            std::all_of(item.begin(), item.end(), [](char c) { return c >= '0' && c <= '9'; }),
        ErrorKind::kUsage, flag, ": '", text, "' is not a shape like 1x3x224x224");
    s.push_back(std::stoll(item));
  }
  DLAS_CHECK(!s.empty(), ErrorKind::kUsage, flag, ": empty shape");
  return s;
}
}  // namespace

Graph load_model_from_args(const ModelArgs& a) {
  LoadOptions o;
  o.zoo.batch = a.batch;
  o.zoo.in_channels = a.in_channels;
  o.zoo.image_size = a.image_size;
  o.zoo.num_classes = a.num_classes;
  o.zoo.width_mult = a.width_mult;
  o.zoo.seed = a.seed;
  for (const std::string& spec : a.input_shapes) {
    const size_t eq = spec.find('=');
    if (eq == std::string::npos) {
      o.onnx.input_shapes[""] = parse_dims(spec, "--input-shape");
    } else {
      o.onnx.input_shapes[spec.substr(0, eq)] = parse_dims(spec.substr(eq + 1), "--input-shape");
    }
  }
  return load_model(a.model, o);
}

}  // namespace dlas::cli

namespace dlas::cli {

namespace {
std::string sparse_names() {
  std::string s;
  for (const ConvAlgorithm* a : sparse_conv_algorithms())
    s += (s.empty() ? "" : "|") + std::string(a->name());
  return s;
}
}  // namespace

void add_engine_args(CLI::App& cmd, EngineArgs& a) {
  cmd.add_option("--conv-algo", a.conv_algo,
                 "convolution algorithm for every layer: " + conv_algorithm_names() +
                     "|auto (layers it cannot run use auto); sparse: " + sparse_names() +
                     "; NAME:knob=value,... overrides knobs on every layer NAME runs "
                     "(sparse-direct:format=csr)")
      ->default_val("auto");
  cmd.add_option("--layout", a.layout,
                 "activation layout: nchw | nchwc (the ISA's blocked layout, nchw16c on AVX-512, "
                 "nchw8c on AVX2, wherever a layer has a blocked kernel) | auto (blocked where the "
                 "auto rule expects it to win); docs/engine.md \"Data layouts\"")
      ->default_val("auto");
  cmd.add_option("--layers", a.layers,
                 "JSON file mapping conv node names to {\"algo\": ..., \"knobs\": {...}}")
      ->check(CLI::ExistingFile);
  cmd.add_option("--records", a.records,
                 "tuning records (JSON Lines from `dlas tune`): each conv layer runs the fastest "
                 "recorded algorithm and knobs of its task, from any model (transfer)")
      ->check(CLI::ExistingFile);
  cmd.add_option("--profile", a.profile,
                 "machine profile from `dlas hw --calibrate`: FILE, builtin (the table shipped for "
                 "this ISA path) or none (the hand-written rule); default: $DLAS_PROFILE, then the "
                 "calibration cache, then builtin; docs/engine.md \"Machine profile\"");
  cmd.add_option("--device", a.device,
                 "where the model runs: cpu, or cuda[:N] (dlas's CUDA kernels on GPU N; "
                 "--conv-algo names a CUDA algorithm, --backend cudnn runs cuDNN's); "
                 "docs/gpu.md")
      ->default_val("cpu");
  cmd.add_option("--threads", a.threads, "worker threads (0: one per logical CPU)")
      ->default_val(1)
      ->check(CLI::Range(0, 1024));
  cmd.add_option(
      "--isa", a.isa,
      "force an ISA path: scalar|avx2|avx2-vnni|avx512|avx512-vnni|avx512-bf16|avx512-fp16|amx "
      "(default: the best detected, or DLAS_ISA; docs/engine.md \"ISA paths\")");
  cmd.add_option("--opt-level", a.opt_level,
                 "graph optimizations: 0 none, 1 const-fold+DCE+memory reuse, 2 +BN folding, "
                 "3 +fusion (residual, activation, GELU, LayerNorm, Linear-layer epilogue, "
                 "int8 layers; docs/engine.md \"Graph passes\")")
      ->default_val(3)
      ->check(CLI::Range(0, 3));
  cmd.add_option("--compress", a.compress,
                 "model compression applied before compiling: dense | wp:S (global L1 weight "
                 "pruning) | bp:BxC:S (L1 block pruning, e.g. bp:4x1:0.9) | cp:S (channel "
                 "pruning: conv channels removed, by dependency group; cp:S:roundN keeps multiples "
                 "of N); add :layer for per-layer sparsity; first conv and classifier stay "
                 "dense; quantization: int8[:auto|minmax|percentile[=P]|entropy|mse|none]"
                 "[:u8|s8] (default auto; random calibration at load), fp16, bf16; join with '+', "
                 "e.g. wp:0.9+int8")
      ->default_val("dense");
}

namespace {
CompressSpec parse_compress_flag(const std::string& compress) {
  try {
    return parse_compress(compress);
  } catch (const Error& e) {
    throw Error(e.kind(), "--compress " + std::string(e.what()));
  }
}
}  // namespace

std::string compress_name(const std::string& compress) {
  return parse_compress_flag(compress).str();
}

std::string apply_compress(Graph& graph, const std::string& compress, PruneReport* report,
                           int threads) {
  const CompressSpec spec = parse_compress_flag(compress);
  // int8 calibration runs the model dozens of times: a bar on a terminal, and a line every
  // 10 s in a log (nothing for a short one).
  std::optional<Progress> bar;
  CalibrationProgress progress;
  if (spec.quant && spec.quant->type == QuantType::kInt8 &&
      spec.quant->calibrator != Calibrator::kNone) {
    bar.emplace(Progress::Options{
        .tty = progress_tty(), .label = "calibrate", .line_fraction = 0, .line_seconds = 10});
    progress = [&bar](int64_t done, int64_t total) {
      bar->update(done, total, bar->counts(done, total, "runs"), done == total && bar->tty());
    };
  }
  std::string applied;
  if (spec.prune && report) {
    // Prune here to keep the report, then apply the rest (quantization) alone.
    *report = prune(graph, *spec.prune);
    CompressSpec rest = spec;
    rest.prune.reset();
    apply_compress_spec(graph, rest, threads, progress);
    applied = spec.str();
  } else {
    applied = apply_compress_spec(graph, spec, threads, progress);
  }
  if (bar) bar->finish(/*keep=*/false);
  return applied;
}

PlanOptions plan_options_from_args(const EngineArgs& a, const Graph* graph) {
  if (!a.isa.empty()) set_active_isa(parse_isa(a.isa));
  PlanOptions o;
  o.conv_algo = a.conv_algo;
  AlgoChoiceSpec chosen;
  try {
    chosen = parse_algo_choice(o.conv_algo);
  } catch (const Error& e) {
    fail(ErrorKind::kUsage, "--conv-algo ", e.what());
  }
  DLAS_CHECK(chosen.algo == "auto" || find_conv_algorithm(chosen.algo), ErrorKind::kUsage,
             "--conv-algo '", chosen.algo, "' is not one of ", conv_algorithm_names(), "|auto|",
             sparse_names());
  DLAS_CHECK(chosen.algo != "auto" || chosen.knobs.empty(), ErrorKind::kUsage,
             "--conv-algo auto takes no knobs (name an algorithm: sparse-direct:format=csr)");
  o.layout = parse_layout_mode(a.layout);
  if (!a.layers.empty()) o.layers = read_layer_choices(a.layers);
  DLAS_CHECK(a.profile.empty() || a.profile == "none" || a.profile == "builtin" ||
                 std::filesystem::is_regular_file(a.profile),
             ErrorKind::kUsage, "--profile ", a.profile, ": no such file");
  o.profile = a.profile;
  o.threads = a.threads;
  o.opt_level = a.opt_level;
  o.isa = active_isa();
  if (!a.records.empty() && a.device == "cpu") {  // GPU records: compile_from_args
    DLAS_CHECK(graph, ErrorKind::kUsage, "--records is not supported by this command");
    apply_records_file(*graph, a.records, o);
  }
  return o;
}

void apply_records_file(const Graph& graph, const std::string& path, PlanOptions& o) {
  const tune::AppliedRecords r = tune::apply_records(graph, o, tune::read_records(path));
  for (const auto& [node, choice] : r.layers) o.layers.emplace(node, choice);
  std::fprintf(stderr, "records: %d of %d conv layers tuned from %s\n", r.matched_nodes,
               r.conv_nodes, path.c_str());
}

CompiledModel compile_from_args(const Graph& graph, const ModelArgs& m, const EngineArgs& e,
                                const std::string& backend) {
  const PlanOptions options = plan_options_from_args(e, &graph);
  CompiledModel c;
  Variant& v = c.variant;
  v.model = m.model;
  v.batch = m.batch;
  v.compress = compress_name(e.compress);
  v.backend = backend;
  v.threads = e.threads;
  // A GPU must exist before anything compiles; cuDNN always runs on one.
  try {
    v.device = canonical_device(backend == "cudnn" && e.device == "cpu" ? "cuda" : e.device);
  } catch (const Error& err) {
    throw Error(ErrorKind::kUsage, "--device: " + std::string(err.what()));
  }
  parse_device(v.device);  // kUnsupported, one line, where this machine lacks the GPU
  if (v.device != "cpu") {
    DLAS_CHECK(backend == "dlas" || backend == "cudnn", ErrorKind::kUsage, "--backend ", backend,
               " runs on the CPU only (drop --device ", e.device, ")");
    const GpuInfo& gpu = list_gpus().at(static_cast<size_t>(parse_device(v.device)));
    v.isa = "sm_" + std::to_string(gpu.cc_major) + std::to_string(gpu.cc_minor);
    v.conv_algo = backend == "cudnn" ? "cudnn" : e.conv_algo;
    v.layout = layout_mode_name(parse_layout_mode(e.layout));
    v.opt_level = e.opt_level;
    v.threads = 1;
  } else if (backend == "dlas") {
    v.conv_algo = e.conv_algo;
    v.layout = layout_mode_name(parse_layout_mode(e.layout));
    v.opt_level = e.opt_level;
    v.isa = isa_name(active_isa());
    v.isa_emulated = active_isa() < detected_isa();
  } else {  // a backend that chooses its kernels and dispatches on its own: labelled by name
    v.conv_algo = v.isa = backend;
    v.opt_level = 0;
  }
  LayerChoices layers = options.layers;
  if (v.device != "cpu" && backend == "dlas" && !e.records.empty()) {
    int matched = 0, convs = 0;
    const LayerChoices tuned =
        tune::apply_cuda_records(graph, e.opt_level, parse_device(v.device),
                                 tune::read_records(e.records), &matched, &convs);
    for (const auto& [node, choice] : tuned) layers.emplace(node, choice);
    std::fprintf(stderr, "records: %d of %d conv layers tuned from %s\n", matched, convs,
                 e.records.c_str());
  }
  const auto t0 = std::chrono::steady_clock::now();
  c.executor = make_executor(graph, v, {.layers = layers, .profile = options.profile});
  c.compile_ms = ms_since(t0);
  v.threads = c.executor->threads();
  if (backend == "dlas" && v.device == "cpu") {
    const std::string used = active_machine_profile(options.profile, active_isa(), v.threads).path;
    if (!used.empty()) c.profile = used;
  }
  // The report names the per-layer files that chose the kernels.
  if (backend == "dlas" && (!e.layers.empty() || !e.records.empty()))
    v.conv_algo = !e.layers.empty() ? "layers:" + e.layers : "records:" + e.records;
  return c;
}

int run_app(CLI::App& app, int argc, char** argv, Action& run) {
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    app.exit(e);
    return 2;
  }
  try {
    return run ? run() : 2;
  } catch (const dlas::Error& e) {
    std::cerr << "dlas: error: " << e.what() << "\n";
    return e.exit_code();
  } catch (const std::bad_alloc&) {
    std::cerr << "dlas: error: out of memory\n";
    return 1;
  } catch (const std::exception& e) {
    std::cerr << "dlas: internal error: " << e.what() << "\n";
    return 1;
  }
}

void exec_dlas_train(const std::string& command, const std::vector<std::string>& args) {
  std::error_code ec;
  const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", ec);
  const std::filesystem::path exe = self.parent_path() / "dlas-train";
  if (ec || !std::filesystem::exists(exe)) {
    fail(ErrorKind::kUnsupported, "dlas ", command,
         " needs libtorch: this dlas was built without it (configure with "
         "-DDLAS_WITH_TORCH=ON, which builds bin/dlas-train)");
  }
  std::vector<std::string> all = {"dlas-train", command};
  all.insert(all.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (std::string& s : all) argv.push_back(s.data());
  argv.push_back(nullptr);
  std::fflush(nullptr);
  ::execv(exe.c_str(), argv.data());
  fail(ErrorKind::kRuntime, exe.string(), ": cannot run: ", std::strerror(errno));
}

std::vector<std::string> flag_args(
    const std::string& first, std::initializer_list<std::pair<const char*, std::string>> flags) {
  std::vector<std::string> args = {first};
  for (const auto& [flag, value] : flags) args.insert(args.end(), {flag, value});
  return args;
}

std::string exact_number(double v) {
  std::ostringstream os;
  os.precision(17);
  os << v;
  return os.str();
}

}  // namespace dlas::cli

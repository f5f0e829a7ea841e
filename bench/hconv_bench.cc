// fp16 / bf16 conv microbenchmarks against f32 in the same run: every 16-bit algorithm
// (hconv_algorithms()) and every f32 algorithm on every zoo layer shape it supports
// (bench/shapes/<model>.txt). Benchmarks are named <type>/<algo>/<model>/<key> with type
// f32, f16 or bf16, prepared once with default knobs on active_isa(); the label says the
// 16-bit compute path (emulated / native-fp16 / native-bf16). Counters: FLOPS (2 x MACs per
// second) and peak_pct (% of the measured peak of the unit the conv's arithmetic runs on:
// `dlas hw --peak`'s AMX-BF16, AVX512-BF16 or AVX512-FP16 unit, else the f32 FMAs).
//
//   DLAS_BENCH_THREADS=2 build/dlas_bench_hconv --benchmark_filter='/resnet18-cifar/'
//
// DLAS_HCONV_SUMMARY=1 instead prints, per model, the sum over layers of the best
// algorithm's median time for each type, measured interleaved (f32, f16, bf16 in turn, 7
// rounds) so drift hits every type alike, and the speedup over f32 -- the issue's "best
// algorithm each side" figure:
//   DLAS_HCONV_SUMMARY=1 DLAS_BENCH_THREADS=2 chrt -f 10 build/dlas_bench_hconv vgg16-cifar
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "dlas/algo/conv.h"
#include "dlas/algo/hconv.h"
#include "dlas/core/error.h"
#include "dlas/hw/isa.h"
#include "dlas/hw/peak.h"
#include "dlas/hw/thread_pool.h"
#include "dlas/system/conv_shapes.h"

namespace {

struct FreeDeleter {
  void operator()(void* p) const { std::free(p); }
};
using Buffer = std::unique_ptr<unsigned char[], FreeDeleter>;

Buffer make_buffer(size_t bytes) {
  const size_t rounded = std::max<size_t>(64, (bytes + 63) / 64 * 64);
  return Buffer(static_cast<unsigned char*>(std::aligned_alloc(64, rounded)));
}

std::vector<float> random_floats(size_t n, uint32_t seed) {
  std::vector<float> v(n);
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-1.f, 1.f);
  for (float& x : v) x = dist(rng);
  return v;
}

int bench_threads() {
  const char* s = std::getenv("DLAS_BENCH_THREADS");
  const int t = s ? std::atoi(s) : 1;
  return t > 0 ? t : 1;
}

// One prepared conv of either kind behind a uniform "run once" closure.
struct Runner {
  std::function<void()> run;
  std::string label;
};

// Holds every buffer a runner touches.
struct Case {
  Buffer in, out, ws;
  std::unique_ptr<dlas::PreparedConv> conv;
  bool half = false;
};

// Prepares algorithm `name` for `type` (kF32 or 16-bit) on `p`; nullptr when unsupported.
std::unique_ptr<Case> make_case(dlas::DType type, std::string_view name, const dlas::ConvProblem& p,
                                int threads) {
  const dlas::Isa isa = dlas::active_isa();
  auto c = std::make_unique<Case>();
  const size_t nin = static_cast<size_t>(p.input_count());
  const size_t nout = static_cast<size_t>(p.output_count());
  const std::vector<float> x = random_floats(nin, 1), w = random_floats(p.weight_count(), 2);
  dlas::ConvProblem tp = p;
  if (type != dlas::DType::kF32) tp.set_half(type);
  const dlas::ConvAlgorithm* a = dlas::find_conv_algorithm(name);
  if (!a || !a->supports(tp)) return nullptr;
  try {
    c->half = type != dlas::DType::kF32;
    const size_t esize = c->half ? 2 : 4;
    c->in = make_buffer(nin * esize);
    c->out = make_buffer(nout * esize);
    if (!c->half) {
      c->conv = a->prepare(tp, dlas::ConvWeights::f32(w.data()), a->default_knobs(tp, isa), isa);
      std::copy(x.begin(), x.end(), reinterpret_cast<float*>(c->in.get()));
    } else {
      auto cvt = [&](float f) {
        return type == dlas::DType::kF16 ? dlas::f32_to_f16(f) : dlas::f32_to_bf16(f);
      };
      std::vector<uint16_t> wh(w.size());
      for (size_t i = 0; i < w.size(); ++i) wh[i] = cvt(w[i]);
      c->conv = a->prepare(tp, dlas::ConvWeights::half(wh.data()), a->default_knobs(tp, isa), isa);
      for (size_t i = 0; i < nin; ++i) reinterpret_cast<uint16_t*>(c->in.get())[i] = cvt(x[i]);
    }
    c->ws = make_buffer(c->conv->workspace_bytes(threads));
  } catch (const dlas::Error&) {
    return nullptr;
  }
  return c;
}

void run_once(Case& c, dlas::ThreadPool& pool) {
  c.conv->run(c.in.get(), c.out.get(), nullptr, c.ws.get(), pool);
}

void bench_case(benchmark::State& state, dlas::DType type, std::string name, dlas::ConvProblem p,
                int threads) {
  dlas::ThreadPool pool(threads);
  auto c = make_case(type, name, p, threads);
  if (!c) {
    state.SkipWithError("unsupported");
    return;
  }
  const double peak_gflops = dlas::peak().gops_for(dlas::conv_compute_name(c->conv->compute()),
                                                   dlas::active_isa(), threads);
  const auto start = std::chrono::steady_clock::now();
  for (auto _ : state) {
    run_once(*c, pool);
    benchmark::ClobberMemory();
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const double flops = 2.0 * static_cast<double>(p.macs());
  state.counters["FLOPS"] =
      benchmark::Counter(flops, benchmark::Counter::kIsIterationInvariantRate);
  if (peak_gflops > 0 && seconds > 0)
    state.counters["peak_pct"] =
        100.0 * flops * static_cast<double>(state.iterations()) / seconds / (peak_gflops * 1e9);
  if (c->half) state.SetLabel(dlas::conv_compute_name(c->conv->compute()));
}

std::string read_file(const std::filesystem::path& path) {
  std::ifstream f(path, std::ios::binary);
  std::ostringstream s;
  s << f.rdbuf();
  return s.str();
}

std::vector<std::pair<std::string, std::vector<dlas::ConvShape>>> load_models(
    const std::filesystem::path& dir) {
  std::vector<std::filesystem::path> files;
  for (const auto& e : std::filesystem::directory_iterator(dir))
    if (e.path().extension() == ".txt") files.push_back(e.path());
  std::sort(files.begin(), files.end());
  std::vector<std::pair<std::string, std::vector<dlas::ConvShape>>> out;
  for (const auto& f : files)
    out.emplace_back(f.stem().string(), dlas::parse_conv_shape_list(read_file(f)));
  return out;
}

constexpr dlas::DType kTypes[] = {dlas::DType::kF32, dlas::DType::kF16, dlas::DType::kBF16};

std::vector<std::string> algo_names() {
  std::vector<std::string> names;
  for (const dlas::ConvAlgorithm* a : dlas::conv_algorithms()) names.emplace_back(a->name());
  return names;
}

// Median seconds of `reps` runs (after one warm-up).
double median_time(Case& c, dlas::ThreadPool& pool, int reps) {
  run_once(c, pool);
  std::vector<double> t;
  for (int i = 0; i < reps; ++i) {
    const auto s = std::chrono::steady_clock::now();
    run_once(c, pool);
    t.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - s).count());
  }
  std::nth_element(t.begin(), t.begin() + reps / 2, t.end());
  return t[reps / 2];
}

int summary(const std::filesystem::path& dir, int threads, const std::vector<std::string>& only) {
  dlas::ThreadPool pool(threads);
  std::printf("# isa %s%s, %d threads; per model: sum over layers of the best algorithm's median\n",
              dlas::isa_name(dlas::active_isa()), dlas::isa_emulated() ? " (emulated)" : "",
              threads);
  std::printf("%-16s %10s %10s %10s %8s %8s  %s\n", "model", "f32_ms", "f16_ms", "bf16_ms", "f16_x",
              "bf16_x", "16-bit paths");
  for (const auto& [model, shapes] : load_models(dir)) {
    if (!only.empty() && std::find(only.begin(), only.end(), model) == only.end()) continue;
    double total[3] = {0, 0, 0};
    std::map<std::string, int> paths;
    for (const dlas::ConvShape& s : shapes) {
      double best[3] = {1e30, 1e30, 1e30};
      std::vector<std::pair<int, std::unique_ptr<Case>>> cases;
      for (const std::string& a : algo_names())
        for (int t = 0; t < 3; ++t)
          if (auto c = make_case(kTypes[t], a, s.problem, threads))
            cases.emplace_back(t, std::move(c));
      // Interleaved rounds: every candidate once per round.
      std::vector<std::vector<double>> times(cases.size());
      for (int round = 0; round < 7; ++round)
        for (size_t i = 0; i < cases.size(); ++i)
          times[i].push_back(median_time(*cases[i].second, pool, 3));
      std::vector<std::string> best_path(3);
      for (size_t i = 0; i < cases.size(); ++i) {
        std::sort(times[i].begin(), times[i].end());
        const int t = cases[i].first;
        if (times[i][3] < best[t]) {
          best[t] = times[i][3];
          if (cases[i].second->half)
            best_path[t] = dlas::conv_compute_name(cases[i].second->conv->compute());
        }
      }
      for (int t = 0; t < 3; ++t) total[t] += best[t] * static_cast<double>(s.count);
      paths[best_path[1] + "/" + best_path[2]]++;
    }
    std::string ps;
    for (const auto& [k, v] : paths) ps += k + ":" + std::to_string(v) + " ";
    std::printf("%-16s %10.3f %10.3f %10.3f %8.2f %8.2f  %s\n", model.c_str(), total[0] * 1e3,
                total[1] * 1e3, total[2] * 1e3, total[0] / total[1], total[0] / total[2],
                ps.c_str());
    std::fflush(stdout);
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const char* env_dir = std::getenv("DLAS_BENCH_SHAPES");
  const std::filesystem::path dir = env_dir ? env_dir : DLAS_SOURCE_DIR "/bench/shapes";
  const int threads = bench_threads();
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec)) {
    std::fprintf(stderr, "dlas_bench_hconv: no shape lists in %s\n", dir.c_str());
    return 1;
  }
  if (std::getenv("DLAS_HCONV_SUMMARY")) {
    std::vector<std::string> only(argv + 1, argv + argc);
    return summary(dir, threads, only);
  }
  for (const auto& [model, shapes] : load_models(dir))
    for (const std::string& a : algo_names())
      for (dlas::DType t : kTypes)
        for (const dlas::ConvShape& s : shapes) {
          dlas::ConvProblem tp = s.problem;
          if (t != dlas::DType::kF32) tp.set_half(t);
          if (!dlas::find_conv_algorithm(a)->supports(tp)) continue;
          const std::string name =
              std::string(dlas::dtype_name(t)) + "/" + a + "/" + model + "/" + s.problem.key();
          benchmark::RegisterBenchmark(name.c_str(), bench_case, t, a, s.problem, threads)
              ->UseRealTime()
              ->Unit(benchmark::kMicrosecond);
        }
  benchmark::AddCustomContext("dlas_isa", std::string(dlas::isa_name(dlas::active_isa())) +
                                              (dlas::isa_emulated() ? " (emulated)" : ""));
  benchmark::AddCustomContext("dlas_threads", std::to_string(threads));
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}

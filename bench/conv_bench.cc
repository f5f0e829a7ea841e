// Conv microbenchmarks: every algorithm of conv_algorithms() on every layer shape of the
// zoo models (bench/shapes/<model>.txt, written by dlas_gen_shapes) it supports. One
// benchmark per (algorithm, model, shape), named <algo>/<model>/<key>: prepared once with
// the algorithm's default knobs on active_isa(), then PreparedConv::run in the timed loop
// (no bias, no epilogue: the key is the shape only). Algorithms with a blocked-layout
// implementation also run on the ISA's blocked layout, named <algo>@<layout>/<model>/<key>
// (a stem, one group of <= 4 input channels, reads the NCHW image). Counters: FLOPS (2 x MACs per
// second of wall time) and peak_pct (FLOPS as % of peak().gflops(isa, threads), the measured FMA
// peak of `dlas hw --peak`).
//
//   build/dlas_bench_conv --benchmark_filter='winograd/resnet18-cifar'
//   DLAS_BENCH_THREADS=2 DLAS_ISA=avx2 build/dlas_bench_conv --benchmark_filter='^gemm/'
//
// Environment: DLAS_BENCH_THREADS (pool threads, default 1), DLAS_ISA (lower the ISA path),
// DLAS_BENCH_SHAPES (directory of *.txt shape lists, default the source tree's bench/shapes),
// DLAS_BENCH_KNOBS ("name=value,..." overriding those default knobs the algorithm has, e.g.
// DLAS_BENCH_KNOBS=orient=1,parallel=1 to compare one knob against the default),
// DLAS_BENCH_ALL_KNOBS=1 (also register every point of each algorithm's knob space as
// <algo>/<model>/<key>/k<i>, 256 spread over larger spaces: default-vs-best checks;
// DLAS_BENCH_KNOBS does not apply to them), DLAS_BENCH_COLD=1 (weights timed cold, as
// `dlas hw --calibrate` and the tuner time them: up to 16 prepared copies whose packed
// weights together pass twice the last-level cache, the runs cycling through them; a layer
// inside a model whose weights do not fit the cache reads its weights from memory).
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "dlas/algo/conv.h"
#include "dlas/core/error.h"
#include "dlas/hw/cpu.h"
#include "dlas/hw/isa.h"
#include "dlas/hw/peak.h"
#include "dlas/hw/thread_pool.h"
#include "dlas/system/conv_shapes.h"

namespace {

struct FreeDeleter {
  void operator()(void* p) const { std::free(p); }
};
using Buffer = std::unique_ptr<float[], FreeDeleter>;

// 64-byte aligned (the workspace contract), rounded up to whole cache lines.
Buffer make_buffer(size_t bytes) {
  const size_t rounded = std::max<size_t>(64, (bytes + 63) / 64 * 64);
  return Buffer(static_cast<float*>(std::aligned_alloc(64, rounded)));
}

Buffer random_buffer(size_t count, uint32_t seed) {
  Buffer b = make_buffer(count * sizeof(float));
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-1.f, 1.f);
  for (size_t i = 0; i < count; ++i) b[i] = dist(rng);
  return b;
}

// DLAS_BENCH_KNOBS applied over `knobs`: only names the algorithm already has.
dlas::Knobs override_knobs(dlas::Knobs knobs) {
  const char* s = std::getenv("DLAS_BENCH_KNOBS");
  if (s == nullptr) return knobs;
  std::stringstream list(s);
  std::string item;
  while (std::getline(list, item, ',')) {
    const size_t eq = item.find('=');
    if (eq == std::string::npos) continue;
    const std::string name = item.substr(0, eq);
    if (knobs.count(name)) knobs[name] = std::atoll(item.c_str() + eq + 1);
  }
  return knobs;
}

int bench_threads() {
  const char* s = std::getenv("DLAS_BENCH_THREADS");
  const int t = s ? std::atoi(s) : 1;
  return t > 0 ? t : 1;
}

void run_conv(benchmark::State& state, const dlas::ConvAlgorithm* algo, dlas::ConvProblem p,
              int threads, const dlas::Knobs* point) {
  const dlas::Isa isa = dlas::active_isa();
  dlas::ThreadPool pool(threads);
  const Buffer in =
      random_buffer(static_cast<size_t>(dlas::layout_numel(p.n, p.c, p.h * p.w, p.x_layout)), 1);
  const Buffer weights = random_buffer(static_cast<size_t>(p.weight_count()), 2);
  const Buffer out =
      make_buffer(static_cast<size_t>(dlas::layout_numel(p.n, p.k, p.oh() * p.ow(), p.y_layout)) *
                  sizeof(float));
  std::vector<std::unique_ptr<dlas::PreparedConv>> copies;
  const char* cold_env = std::getenv("DLAS_BENCH_COLD");
  const bool cold = cold_env && *cold_env && std::strcmp(cold_env, "0") != 0;
  const dlas::Knobs knobs = point ? *point : override_knobs(algo->default_knobs(p, isa));
  try {
    const uint64_t llc =
        dlas::cpu_info().l3_bytes ? dlas::cpu_info().l3_bytes : dlas::cpu_info().l2_bytes;
    size_t packed = 0;
    do {
      copies.push_back(
          algo->prepare(p, dlas::ConvWeights::f32(weights.get(), nullptr), knobs, isa));
      packed += copies.back()->packed_bytes();
    } while (cold && copies.size() < 16 && packed < 2 * llc);
  } catch (const dlas::Error& e) {
    state.SkipWithError(e.what());
    return;
  }
  const Buffer ws = make_buffer(copies.front()->workspace_bytes(threads));
  // Measured once per process, outside the timed loop (about 1-2 s).
  const double peak_gflops = dlas::peak().gflops(isa, threads);
  // Wall time of the timed loop, for peak_pct (Google Benchmark keeps its own timer private).
  const auto start = std::chrono::steady_clock::now();
  size_t next = 0;
  for (auto _ : state) {
    copies[next]->run(in.get(), out.get(), nullptr, ws.get(), pool);
    next = next + 1 == copies.size() ? 0 : next + 1;
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
}

std::string read_file(const std::filesystem::path& path) {
  std::ifstream f(path, std::ios::binary);
  std::ostringstream s;
  s << f.rdbuf();
  return s.str();
}

// Registers <algo>/<model>/<key> for every shape list in `dir` (sorted by file name).
int register_benchmarks(const std::filesystem::path& dir, int threads) {
  std::vector<std::filesystem::path> files;
  for (const auto& entry : std::filesystem::directory_iterator(dir))
    if (entry.path().extension() == ".txt") files.push_back(entry.path());
  std::sort(files.begin(), files.end());
  int registered = 0;
  for (const auto& file : files) {
    const std::string model = file.stem().string();
    std::vector<dlas::ConvShape> shapes;
    try {
      shapes = dlas::parse_conv_shape_list(read_file(file));
    } catch (const dlas::Error& e) {
      std::fprintf(stderr, "dlas_bench_conv: %s: %s\n", file.c_str(), e.what());
      std::exit(1);
    }
    const dlas::Layout blocked = dlas::native_blocked_layout(dlas::active_isa());
    for (const dlas::ConvAlgorithm* algo : dlas::conv_algorithms()) {
      for (const dlas::ConvShape& shape : shapes)
        for (const bool in_blocked : {false, true}) {
          dlas::ConvShape s = shape;
          std::string label(algo->name());
          if (in_blocked) {
            if (!dlas::is_blocked(blocked)) continue;
            s.problem.set_layouts(
                s.problem.groups == 1 && s.problem.c <= 4 ? dlas::Layout::kNchw : blocked, blocked);
            label += std::string("@") + dlas::layout_name(blocked);
          }
          if (!algo->supports(s.problem)) continue;
          const std::string name = label + "/" + model + "/" + shape.problem.key();
          benchmark::RegisterBenchmark(name.c_str(), run_conv, algo, s.problem, threads, nullptr)
              ->UseRealTime()  // the pool's workers do the work: CPU time of this thread is not it
              ->Unit(benchmark::kMicrosecond);
          ++registered;
          if (std::getenv("DLAS_BENCH_ALL_KNOBS") == nullptr) continue;
          const dlas::KnobSpace space = algo->knob_space(s.problem, dlas::active_isa());
          // Every point, or 256 spread evenly over a larger space (mixed-radix order, so an
          // even stride varies every knob).
          const int64_t n = space.size() < 256 ? space.size() : 256;
          for (int64_t i = 0; i < n; ++i) {
            // Kept alive for the process: benchmarks run after registration.
            static std::vector<std::unique_ptr<dlas::Knobs>> points;
            points.push_back(std::make_unique<dlas::Knobs>(
                space.point(n == space.size() ? i : i * (space.size() / n))));
            benchmark::RegisterBenchmark((name + "/k" + std::to_string(i)).c_str(), run_conv, algo,
                                         s.problem, threads, points.back().get())
                ->UseRealTime()
                ->Unit(benchmark::kMicrosecond);
            ++registered;
          }
        }
    }
  }
  return registered;
}

}  // namespace

int main(int argc, char** argv) {
  const char* env_dir = std::getenv("DLAS_BENCH_SHAPES");
  const std::filesystem::path dir = env_dir ? env_dir : DLAS_SOURCE_DIR "/bench/shapes";
  const int threads = bench_threads();
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec)) {
    std::fprintf(stderr, "dlas_bench_conv: no shape lists in %s (set DLAS_BENCH_SHAPES)\n",
                 dir.c_str());
    return 1;
  }
  register_benchmarks(dir, threads);
  benchmark::AddCustomContext("dlas_isa", std::string(dlas::isa_name(dlas::active_isa())) +
                                              (dlas::isa_emulated() ? " (emulated)" : ""));
  benchmark::AddCustomContext("dlas_threads", std::to_string(threads));
  benchmark::AddCustomContext("dlas_shapes", dir.string());
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}

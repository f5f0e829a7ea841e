// int8 conv microbenchmarks against the fp32 best in the same run: on the layer shapes of
// resnet18-cifar, vgg16-cifar and resnet50 (bench/shapes/<model>.txt), every int8
// int8 algorithm of conv_algorithms() that supports the shape (`direct`, `spatial-pack`, `gemm`,
// `depthwise`) and the fp32 `gemm` and `winograd`, each prepared once with its
// default knobs on active_isa(). Benchmarks are registered shape by shape, int8 and fp32
// side by side (interleaved in time), named <dtype>/<algo>/<model>/<key>.
// Counters: GOPS (2 x MACs per second), peak_pct (% of the measured peak of the unit the
// conv's arithmetic runs on, `dlas hw --peak`: AMX-INT8 tiles, zmm vpdpbusd on AVX512-VNNI
// paths, else -- the pmaddwd paths -- the f32 FMAs; fp32: the FMAs).
// At exit it prints per model the layer-count-weighted total of the best int8 and the
// best fp32 time per shape, and their ratio (the int8 >= 3x target).
//
//   DLAS_BENCH_THREADS=2 chrt -f 10 build/dlas_bench_qconv --benchmark_min_time=0.2
//   DLAS_BENCH_THREADS=2 build/dlas_bench_qconv --benchmark_filter='resnet18-cifar'
//
// Environment: DLAS_BENCH_THREADS (default 1), DLAS_ISA, DLAS_BENCH_SHAPES (directory),
// DLAS_BENCH_MODELS (comma list, default resnet18-cifar,vgg16-cifar,resnet50).
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "dlas/algo/conv.h"
#include "dlas/algo/qconv.h"
#include "dlas/core/error.h"
#include "dlas/hw/isa.h"
#include "dlas/hw/peak.h"
#include "dlas/hw/thread_pool.h"
#include "dlas/system/conv_shapes.h"

namespace {

struct FreeDeleter {
  void operator()(void* p) const { std::free(p); }
};
using Buffer = std::unique_ptr<uint8_t[], FreeDeleter>;

Buffer make_buffer(size_t bytes) {
  const size_t rounded = std::max<size_t>(64, (bytes + 63) / 64 * 64);
  return Buffer(static_cast<uint8_t*>(std::aligned_alloc(64, rounded)));
}

int bench_threads() {
  const char* s = std::getenv("DLAS_BENCH_THREADS");
  const int t = s ? std::atoi(s) : 1;
  return t > 0 ? t : 1;
}

struct Key {
  std::string model, shape;
  bool operator<(const Key& o) const {
    return model != o.model ? model < o.model : shape < o.shape;
  }
};
struct Best {
  double int8_s = 0, f32_s = 0;  // best seconds per run
  std::string int8_algo, f32_algo;
  int64_t count = 1;
};
std::map<Key, Best>& results() {
  static std::map<Key, Best> r;
  return r;
}

void record(const Key& key, bool int8, const std::string& algo, double s) {
  Best& b = results()[key];
  double& t = int8 ? b.int8_s : b.f32_s;
  if (t == 0 || s < t) {
    t = s;
    (int8 ? b.int8_algo : b.f32_algo) = algo;
  }
}

template <class Run>
void timed(benchmark::State& state, double flops, double peak_gflops, const Key& key, bool int8,
           const std::string& algo, Run run) {
  const auto start = std::chrono::steady_clock::now();
  for (auto _ : state) {
    run();
    benchmark::ClobberMemory();
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  state.counters["GOPS"] =
      benchmark::Counter(flops * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
  if (state.iterations() > 0 && seconds > 0) {
    const double per = seconds / static_cast<double>(state.iterations());
    record(key, int8, algo, per);
    if (peak_gflops > 0) state.counters["peak_pct"] = 100.0 * flops / per / (peak_gflops * 1e9);
  }
}

// `knobs` empty: the algorithm's default point.
void run_qconv(benchmark::State& state, const dlas::ConvAlgorithm* algo, dlas::ConvProblem c,
               int threads, Key key, dlas::Knobs knobs) {
  const dlas::Isa isa = dlas::active_isa();
  dlas::ThreadPool pool(threads);
  dlas::ConvProblem p = c;
  p.has_bias = true;
  p.epilogue.act = dlas::Activation::kRelu;
  p.set_int8({0.02f, 0, dlas::DType::kU8}, {0.05f, 0, dlas::DType::kU8});
  std::mt19937 rng(1);
  const size_t nx = static_cast<size_t>(c.n * c.c * c.h * c.w);
  const size_t ny = static_cast<size_t>(c.n * c.k * c.oh() * c.ow());
  Buffer x = make_buffer(nx), y = make_buffer(ny);
  std::vector<int8_t> w(static_cast<size_t>(c.weight_count()));
  for (size_t i = 0; i < nx; ++i) x[i] = static_cast<uint8_t>(rng());
  for (auto& v : w) v = static_cast<int8_t>(rng());
  std::vector<float> ws(static_cast<size_t>(c.k), 0.001f);
  std::vector<int32_t> bias(static_cast<size_t>(c.k), 0);
  std::unique_ptr<dlas::PreparedConv> prepared;
  try {
    prepared = algo->prepare(p, dlas::ConvWeights::int8(w.data(), ws.data(), bias.data()),
                             knobs.empty() ? algo->default_knobs(p, isa) : knobs, isa);
  } catch (const dlas::Error& e) {
    state.SkipWithError(e.what());
    return;
  }
  Buffer work = make_buffer(prepared->workspace_bytes(threads));
  const double peak =
      dlas::peak().gops_for(dlas::conv_compute_name(prepared->compute()), isa, threads);
  std::string label(algo->name());
  for (const auto& [k, v] : knobs) label += ":" + k + "=" + std::to_string(v);
  timed(state, 2.0 * static_cast<double>(c.macs()), peak, key, true, label,
        [&] { prepared->run(x.get(), y.get(), nullptr, work.get(), pool); });
}

void run_f32(benchmark::State& state, const dlas::ConvAlgorithm* algo, dlas::ConvProblem c,
             int threads, Key key) {
  const dlas::Isa isa = dlas::base_isa(dlas::active_isa());
  dlas::ThreadPool pool(threads);
  c.has_bias = true;
  c.epilogue.act = dlas::Activation::kRelu;
  std::mt19937 rng(2);
  std::uniform_real_distribution<float> dist(-1.f, 1.f);
  std::vector<float> x(static_cast<size_t>(c.n * c.c * c.h * c.w)), w(c.weight_count()), b(c.k),
      y(static_cast<size_t>(c.n * c.k * c.oh() * c.ow()));
  for (auto& v : x) v = dist(rng);
  for (auto& v : w) v = dist(rng);
  std::unique_ptr<dlas::PreparedConv> prepared;
  try {
    prepared = algo->prepare(c, dlas::ConvWeights::f32(w.data(), b.data()),
                             algo->default_knobs(c, isa), isa);
  } catch (const dlas::Error& e) {
    state.SkipWithError(e.what());
    return;
  }
  Buffer work = make_buffer(prepared->workspace_bytes(threads));
  const double peak = dlas::peak().gflops(isa, threads);
  timed(state, 2.0 * static_cast<double>(c.macs()), peak, key, false, std::string(algo->name()),
        [&] {
          prepared->run(x.data(), y.data(), nullptr, reinterpret_cast<float*>(work.get()), pool);
        });
}

std::string read_file(const std::filesystem::path& path) {
  std::ifstream f(path, std::ios::binary);
  std::ostringstream s;
  s << f.rdbuf();
  return s.str();
}

std::vector<std::string> bench_models() {
  const char* s = std::getenv("DLAS_BENCH_MODELS");
  std::stringstream list(s ? s : "resnet18-cifar,vgg16-cifar,resnet50");
  std::vector<std::string> out;
  std::string item;
  while (std::getline(list, item, ','))
    if (!item.empty()) out.push_back(item);
  return out;
}

void register_benchmarks(const std::filesystem::path& dir, int threads) {
  for (const std::string& model : bench_models()) {
    const std::filesystem::path file = dir / (model + ".txt");
    std::vector<dlas::ConvShape> shapes;
    try {
      shapes = dlas::parse_conv_shape_list(read_file(file));
    } catch (const dlas::Error& e) {
      std::fprintf(stderr, "dlas_bench_qconv: %s: %s\n", file.c_str(), e.what());
      std::exit(1);
    }
    for (const dlas::ConvShape& s : shapes) {
      const Key key{model, s.problem.key()};
      results()[key].count = s.count;
      dlas::ConvProblem qp = s.problem;
      qp.set_int8({}, {});
      for (const dlas::ConvAlgorithm* algo : dlas::conv_algorithms()) {
        if (!algo->supports(qp)) continue;
        // The depthwise lane orders side by side (each a name of its own).
        std::vector<dlas::Knobs> points{{}};
        const dlas::KnobSpace space = algo->knob_space(qp, dlas::active_isa());
        if (const auto* lanes = space.find("lanes")) {
          points.clear();
          for (int64_t v : lanes->values) points.push_back({{"lanes", v}});
        }
        for (const dlas::Knobs& k : points) {
          std::string name = "int8/" + std::string(algo->name());
          for (const auto& [knob, v] : k) name += ":" + knob + "=" + std::to_string(v);
          benchmark::RegisterBenchmark((name + "/" + model + "/" + key.shape).c_str(), run_qconv,
                                       algo, s.problem, threads, key, k)
              ->UseRealTime()
              ->Unit(benchmark::kMicrosecond);
        }
      }
      for (const char* name : {"gemm", "winograd", "depthwise"}) {
        const dlas::ConvAlgorithm* algo = dlas::find_conv_algorithm(name);
        if (!algo || !algo->supports(s.problem)) continue;
        benchmark::RegisterBenchmark(
            ("f32/" + std::string(name) + "/" + model + "/" + key.shape).c_str(), run_f32, algo,
            s.problem, threads, key)
            ->UseRealTime()
            ->Unit(benchmark::kMicrosecond);
      }
    }
  }
}

void print_totals() {
  std::map<std::string, std::pair<double, double>> totals;
  std::printf("\nbest per shape (x layer count): model shape int8[algo] f32[algo] speedup\n");
  for (const auto& [key, b] : results()) {
    if (b.int8_s == 0 || b.f32_s == 0) continue;
    totals[key.model].first += b.int8_s * static_cast<double>(b.count);
    totals[key.model].second += b.f32_s * static_cast<double>(b.count);
    std::printf("  %-15s %-45s x%-2lld %9.1f us [%s] %9.1f us [%s] %5.2fx\n", key.model.c_str(),
                key.shape.c_str(), static_cast<long long>(b.count), b.int8_s * 1e6,
                b.int8_algo.c_str(), b.f32_s * 1e6, b.f32_algo.c_str(), b.f32_s / b.int8_s);
  }
  for (const auto& [model, t] : totals)
    std::printf("model %-15s conv total: int8 %.3f ms, fp32 %.3f ms, int8 speedup %.2fx\n",
                model.c_str(), t.first * 1e3, t.second * 1e3, t.second / t.first);
}

}  // namespace

int main(int argc, char** argv) {
  const char* env_dir = std::getenv("DLAS_BENCH_SHAPES");
  const std::filesystem::path dir = env_dir ? env_dir : DLAS_SOURCE_DIR "/bench/shapes";
  const int threads = bench_threads();
  register_benchmarks(dir, threads);
  benchmark::AddCustomContext("dlas_isa", std::string(dlas::isa_name(dlas::active_isa())) +
                                              (dlas::isa_emulated() ? " (emulated)" : ""));
  benchmark::AddCustomContext("dlas_threads", std::to_string(threads));
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  print_totals();
  return 0;
}

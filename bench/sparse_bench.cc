// Sparse conv microbenchmarks: the sparse algorithms (sparse_conv_algorithms(): sparse-1x1,
// sparse-gemm, sparse-direct, sparse-spatial-pack) against dense `gemm` and the dense `auto`
// choice on the groups-1 conv layers of resnet18-cifar and mobilenetv1-cifar
// (bench/shapes/<model>.txt; the 3-channel stem is skipped: pruning keeps the first conv
// dense), with weights randomly masked to 90% and 95% sparsity (wp0.90, wp0.95:
// unstructured) and with 90% of the 8x1 blocks along output channels zeroed (bp8x1_0.90:
// what `--compress bp:8x1:0.9` gives, sparse-spatial-pack's natural input).
//
// Two kinds of benchmark per (model, shape):
//   <algo>/<model>/wp<S>/<key>          one algorithm alone (gemm and auto: S = dense cost);
//                                        FLOPS = dense-equivalent 2*MACs/s, eff_FLOPS = 2 *
//                                        nonzeros * pixels / s (sparse algorithms only).
//   ab/<sparse algo>/<model>/wp<S>/<key>  gemm, auto and the sparse algorithm run alternately
//                                        (A/B/C, A/B/C, ...) in one timed loop; counters
//                                        speedup_gemm and speedup_auto are the ratios of their
//                                        summed wall times: robust on a loaded machine.
//
//   build/dlas_bench_sparse --benchmark_filter='^ab/sparse-gemm/resnet18'
//   DLAS_BENCH_THREADS=2 build/dlas_bench_sparse --benchmark_filter='^ab/'
//
// Environment: DLAS_BENCH_THREADS (pool threads, default 1), DLAS_ISA (lower the ISA path),
// DLAS_BENCH_SHAPES (directory of shape lists, default the source tree's bench/shapes).
#include <benchmark/benchmark.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "dlas/algo/conv.h"
#include "dlas/core/error.h"
#include "dlas/hw/isa.h"
#include "dlas/hw/thread_pool.h"
#include "dlas/system/conv_shapes.h"

namespace {

const char* const kModels[] = {"resnet18-cifar", "mobilenetv1-cifar"};
struct Sparsity {
  double s;
  int block_rows;  // 1: unstructured; 8: whole 8x1 blocks (8 output channels x one tap)
};
const Sparsity kSparsities[] = {{0.90, 1}, {0.95, 1}, {0.90, 8}};

struct FreeDeleter {
  void operator()(void* p) const { std::free(p); }
};
using Buffer = std::unique_ptr<float[], FreeDeleter>;

Buffer make_buffer(size_t bytes) {
  const size_t rounded = (bytes + 63) / 64 * 64 + 64;
  return Buffer(static_cast<float*>(std::aligned_alloc(64, rounded)));
}

int bench_threads() {
  const char* s = std::getenv("DLAS_BENCH_THREADS");
  const int t = s ? std::atoi(s) : 1;
  return t > 0 ? t : 1;
}

// Input and weights of one layer, the weights masked to `sparsity` (each zeroed with that
// probability: unstructured, like global magnitude pruning gives per layer; or each
// block_rows x 1 block along output channels, like block pruning).
struct Layer {
  dlas::ConvProblem p;
  Buffer in, w, out;
  int64_t nnz = 0;
  Layer(const dlas::ConvProblem& prob, Sparsity sp) : p(prob) {
    std::mt19937 rng(7);
    std::uniform_real_distribution<float> dist(-1.f, 1.f);
    std::bernoulli_distribution zero(sp.s);
    const size_t nin = static_cast<size_t>(p.n * p.c * p.h * p.w), nw = p.weight_count();
    in = make_buffer(nin * sizeof(float));
    w = make_buffer(nw * sizeof(float));
    out = make_buffer(static_cast<size_t>(p.n * p.k * p.oh() * p.ow()) * sizeof(float));
    for (size_t i = 0; i < nin; ++i) in[i] = dist(rng);
    const size_t r = nw / static_cast<size_t>(p.k), br = static_cast<size_t>(sp.block_rows);
    for (size_t k0 = 0; k0 < static_cast<size_t>(p.k); k0 += br)
      for (size_t j = 0; j < r; ++j) {
        const bool z = zero(rng);
        for (size_t k = k0; k < k0 + br && k < static_cast<size_t>(p.k); ++k) {
          w[k * r + j] = z ? 0.f : dist(rng);
          nnz += w[k * r + j] != 0.f;
        }
      }
  }
};

struct Prepared {
  std::unique_ptr<dlas::PreparedConv> conv;
  Buffer ws;
  Prepared(const dlas::ConvAlgorithm& a, const Layer& l, int threads) {
    const dlas::Isa isa = dlas::active_isa();
    conv =
        a.prepare(l.p, dlas::ConvWeights::f32(l.w.get(), nullptr), a.default_knobs(l.p, isa), isa);
    ws = make_buffer(conv->workspace_bytes(threads));
  }
  void run(const Layer& l, dlas::ThreadPool& pool) const {
    conv->run(l.in.get(), l.out.get(), nullptr, ws.get(), pool);
  }
};

void set_flops(benchmark::State& state, const Layer& l, bool sparse) {
  const double dense = 2.0 * static_cast<double>(l.p.macs());
  state.counters["FLOPS"] =
      benchmark::Counter(dense, benchmark::Counter::kIsIterationInvariantRate);
  if (sparse) {
    const double eff =
        2.0 * static_cast<double>(l.nnz) * static_cast<double>(l.p.n * l.p.oh() * l.p.ow());
    state.counters["eff_FLOPS"] =
        benchmark::Counter(eff, benchmark::Counter::kIsIterationInvariantRate);
    state.counters["density"] =
        static_cast<double>(l.nnz) / static_cast<double>(l.p.weight_count());
  }
}

void run_one(benchmark::State& state, const dlas::ConvAlgorithm* algo, dlas::ConvProblem p,
             Sparsity sparsity, bool sparse, int threads) {
  dlas::ThreadPool pool(threads);
  const Layer l(p, sparsity);
  try {
    const Prepared pr(*algo, l, threads);
    for (auto _ : state) {
      pr.run(l, pool);
      benchmark::ClobberMemory();
    }
  } catch (const dlas::Error& e) {
    state.SkipWithError(e.what());
    return;
  }
  set_flops(state, l, sparse);
}

void run_ab(benchmark::State& state, const dlas::ConvAlgorithm* sparse, dlas::ConvProblem p,
            Sparsity sparsity, int threads) {
  dlas::ThreadPool pool(threads);
  const Layer l(p, sparsity);
  using Clock = std::chrono::steady_clock;
  double t[3] = {0, 0, 0};  // gemm, auto, sparse seconds
  try {
    const Prepared gemm(*dlas::find_conv_algorithm("gemm"), l, threads);
    const Prepared best(dlas::auto_conv_algorithm(p, dlas::active_isa()), l, threads);
    const Prepared sp(*sparse, l, threads);
    const Prepared* order[3] = {&gemm, &best, &sp};
    for (auto _ : state) {
      for (int i = 0; i < 3; ++i) {
        const auto t0 = Clock::now();
        order[i]->run(l, pool);
        benchmark::ClobberMemory();
        t[i] += std::chrono::duration<double>(Clock::now() - t0).count();
      }
    }
  } catch (const dlas::Error& e) {
    state.SkipWithError(e.what());
    return;
  }
  const double iters = static_cast<double>(state.iterations());
  state.counters["gemm_us"] = 1e6 * t[0] / iters;
  state.counters["auto_us"] = 1e6 * t[1] / iters;
  state.counters["sparse_us"] = 1e6 * t[2] / iters;
  state.counters["speedup_gemm"] = t[0] / t[2];
  state.counters["speedup_auto"] = t[1] / t[2];
  state.counters["GFLOPS_dense_eq"] = 2.0 * static_cast<double>(p.macs()) * iters / t[2] * 1e-9;
  state.counters["GFLOPS_eff"] = 2.0 * static_cast<double>(l.nnz) *
                                 static_cast<double>(p.n * p.oh() * p.ow()) * iters / t[2] * 1e-9;
}

std::string read_file(const std::filesystem::path& path) {
  std::ifstream f(path, std::ios::binary);
  std::ostringstream s;
  s << f.rdbuf();
  return s.str();
}

std::string sparsity_tag(Sparsity s) {
  char buf[32];
  if (s.block_rows > 1)
    std::snprintf(buf, sizeof buf, "bp%dx1_%.2f", s.block_rows, s.s);
  else
    std::snprintf(buf, sizeof buf, "wp%.2f", s.s);
  return buf;
}

void register_benchmarks(const std::filesystem::path& dir, int threads) {
  for (const char* model : kModels) {
    const auto file = dir / (std::string(model) + ".txt");
    std::vector<dlas::ConvShape> shapes;
    try {
      shapes = dlas::parse_conv_shape_list(read_file(file));
    } catch (const dlas::Error& e) {
      std::fprintf(stderr, "dlas_bench_sparse: %s: %s\n", file.c_str(), e.what());
      std::exit(1);
    }
    for (const dlas::ConvShape& s : shapes) {
      const dlas::ConvProblem& p = s.problem;
      if (p.groups != 1 || p.c < 4) continue;  // depthwise / stem stay dense
      const std::string key = std::string(model) + "/" + p.key() + "/x" + std::to_string(s.count);
      for (Sparsity sp : kSparsities) {
        const std::string tag = sparsity_tag(sp);
        for (const char* dense : {"gemm"}) {
          const auto* a = dlas::find_conv_algorithm(dense);
          benchmark::RegisterBenchmark((std::string(dense) + "/" + tag + "/" + key).c_str(),
                                       run_one, a, p, sp, false, threads)
              ->UseRealTime()
              ->Unit(benchmark::kMicrosecond);
        }
        for (const dlas::ConvAlgorithm* a : dlas::sparse_conv_algorithms()) {
          if (!a->supports(p)) continue;
          const std::string name = std::string(a->name()) + "/" + tag + "/" + key;
          benchmark::RegisterBenchmark(name.c_str(), run_one, a, p, sp, true, threads)
              ->UseRealTime()
              ->Unit(benchmark::kMicrosecond);
          benchmark::RegisterBenchmark(("ab/" + name).c_str(), run_ab, a, p, sp, threads)
              ->UseRealTime()
              ->Unit(benchmark::kMicrosecond);
        }
      }
    }
  }
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
  return 0;
}

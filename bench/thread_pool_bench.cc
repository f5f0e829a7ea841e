// Fork/join overhead of the engine's thread pool (dlas::ThreadPool, its own thread team) vs
// Debian's pthreadpool and OpenMP (`#pragma omp parallel for`, libgomp) on the small
// parallel loops an inference issues per layer: 64 or 4096 items of no work, ~25 ns or
// ~0.8 us each (Zen 5), on 2 threads. Serial runs of the same loops give the work itself,
// so per-call overhead is time(parallel) - time(serial) / threads. Interleave the
// repetitions: the host's thread placement drifts over a run.
//
//   build/dlas_bench_threadpool --benchmark_repetitions=6 --benchmark_enable_random_interleaving=true
#include <benchmark/benchmark.h>
#include <omp.h>
#include <pthreadpool.h>

#include <algorithm>
#include <vector>

#include "dlas/hw/thread_pool.h"

namespace {

constexpr int kThreads = 2;

// A dependent multiply-add chain per item. Consecutive items overlap in the out-of-order
// core, so an item costs less than iters x (mul + add latency): BM_Serial measures the real
// per-item cost (2.45 GHz Zen3: 40 iterations ~ 50 ns, 600 ~ 1 us of CPU time).
inline float work(int iters, float seed) {
  float x = seed;
  for (int i = 0; i < iters; ++i) {
    x = x * 0.999f + 0.001f;
    asm volatile("" : "+x"(x));
  }
  return x;
}

float g_out[4096 * 4];

void BM_Serial(benchmark::State& state) {
  const int items = static_cast<int>(state.range(0)), iters = static_cast<int>(state.range(1));
  for (auto _ : state) {
    for (int i = 0; i < items; ++i) g_out[i] = work(iters, static_cast<float>(i));
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(state.iterations() * items);
}

void BM_ThreadPool(benchmark::State& state) {
  const int items = static_cast<int>(state.range(0)), iters = static_cast<int>(state.range(1));
  dlas::ThreadPool pool(kThreads);
  for (auto _ : state) {
    pool.parallel_for(static_cast<size_t>(items),
                      [&](size_t i) { g_out[i] = work(iters, static_cast<float>(i)); });
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(state.iterations() * items);
}

// Debian's pthreadpool directly, as the engine's pool ran before the team: the same
// denormal flag, work stealing per item.
void BM_Pthreadpool(benchmark::State& state) {
  const int items = static_cast<int>(state.range(0)), iters = static_cast<int>(state.range(1));
  pthreadpool_t pool = pthreadpool_create(kThreads);
  struct Ctx {
    int iters;
  } ctx{iters};
  for (auto _ : state) {
    pthreadpool_parallelize_1d(
        pool,
        [](void* c, size_t i) {
          g_out[i] = work(static_cast<Ctx*>(c)->iters, static_cast<float>(i));
        },
        &ctx, static_cast<size_t>(items), PTHREADPOOL_FLAG_DISABLE_DENORMALS);
    benchmark::ClobberMemory();
  }
  pthreadpool_destroy(pool);
  state.SetItemsProcessed(state.iterations() * items);
}

void BM_OpenMP(benchmark::State& state) {
  const int items = static_cast<int>(state.range(0)), iters = static_cast<int>(state.range(1));
  omp_set_num_threads(kThreads);
  for (auto _ : state) {
#pragma omp parallel for schedule(static)
    for (int i = 0; i < items; ++i) g_out[i] = work(iters, static_cast<float>(i));
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(state.iterations() * items);
}

// OpenMP with dynamic scheduling: pthreadpool balances items dynamically too.
void BM_OpenMPDynamic(benchmark::State& state) {
  const int items = static_cast<int>(state.range(0)), iters = static_cast<int>(state.range(1));
  omp_set_num_threads(kThreads);
  for (auto _ : state) {
#pragma omp parallel for schedule(dynamic, 1)
    for (int i = 0; i < items; ++i) g_out[i] = work(iters, static_cast<float>(i));
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(state.iterations() * items);
}

// On a shared machine the fastest repetition is the one least disturbed by other processes:
// report min next to mean / median (--benchmark_repetitions=N).
double min_of(const std::vector<double>& v) { return *std::min_element(v.begin(), v.end()); }

void shapes(benchmark::internal::Benchmark* b) {
  b->ArgNames({"items", "work_iters"});
  b->ComputeStatistics("min", min_of);
  for (int items : {64, 4096})
    for (int iters : {0, 40, 600}) b->Args({items, iters});
}

BENCHMARK(BM_Serial)->Apply(shapes);
BENCHMARK(BM_ThreadPool)->Apply(shapes)->UseRealTime();
BENCHMARK(BM_Pthreadpool)->Apply(shapes)->UseRealTime();
BENCHMARK(BM_OpenMP)->Apply(shapes)->UseRealTime();
BENCHMARK(BM_OpenMPDynamic)->Apply(shapes)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();

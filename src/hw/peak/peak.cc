#include "dlas/hw/peak.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "dlas/core/error.h"
#include "dlas/hw/amx.h"
#include "dlas/hw/cpu.h"
#include "dlas/hw/thread_pool.h"
#include "hw/peak/peak_probes.h"

namespace dlas {

namespace {
// The single-thread peak times threads, capped at the all-threads one.
double scaled(double single, double all, int t) {
  return std::min(single * std::max(1, t), std::max(all, single));
}
}  // namespace

double PeakInfo::gflops(Isa isa, int t) const {
  const IsaPeak& p = at(isa);
  if (!p.supported) return 0;
  return scaled(p.gflops_single, p.gflops_all, t);
}

double PeakInfo::gops_for(std::string_view compute, Isa isa, int t) const {
  std::string_view unit;
  if (compute == "amx-int8") unit = "amx-int8";
  if (compute == "amx-bf16") unit = "amx-bf16";
  if (compute == "native-bf16") unit = "avx512-bf16";
  if (compute == "native-fp16") unit = "avx512-fp16";
  if (compute == "int8" && isa >= Isa::kAvx512Vnni) unit = "vnni-int8";
  for (const UnitPeak& u : units)
    if (u.supported && unit == u.name && isa >= u.isa) return scaled(u.gops_single, u.gops_all, t);
  return gflops(isa, t);
}

namespace {

using Clock = std::chrono::steady_clock;
namespace pd = peak_detail;

// Keeps results alive so the probes are not optimised away.
std::atomic<float> g_sink{0};

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

using Probe = float (*)(int64_t);

struct ProbeInfo {
  Probe fn;
  double ops_per_iter;  // operations (2 per multiply-add) of one iteration
};

ProbeInfo probe_for(Isa isa) {
  // 12 chains x lanes x 2 (one FMA, or a multiply and an add).
  switch (isa) {
    case Isa::kScalar:
      return {&pd::fma_probe_scalar, pd::kChains * 1 * 2};
    case Isa::kAvx2:
      return {&pd::fma_probe_avx2, pd::kChains * 8 * 2};
    case Isa::kAvx512:
      return {&pd::fma_probe_avx512, pd::kChains * 16 * 2};
    default:
      break;
  }
  fail(ErrorKind::kInternal, "no FLOP/s probe for ISA ", static_cast<int>(isa));
}

// Best-of-`runs` time of fn() (seconds).
template <class Fn>
double best_time(int runs, Fn&& fn) {
  double best = 1e30;
  for (int r = 0; r < runs; ++r) {
    const auto t0 = Clock::now();
    fn();
    best = std::min(best, seconds_since(t0));
  }
  return best;
}

// GFLOP/s of the probe on `threads` threads of `pool` (threads == 1: inline).
double flops_probe(const ProbeInfo& p, ThreadPool& pool, int threads, const PeakOptions& o) {
  // Calibrate on one thread: grow the iteration count until a run takes >= 2 ms, then
  // scale to the target run length.
  int64_t iters = 1000;
  double t = 0;
  for (;;) {
    const auto t0 = Clock::now();
    g_sink = g_sink + p.fn(iters);
    t = seconds_since(t0);
    if (t >= 0.002) break;
    iters *= 4;
  }
  iters = std::max<int64_t>(1000, static_cast<int64_t>(iters * (o.seconds_per_run / t)));
  auto run = [&] {
    if (threads == 1) {
      g_sink = g_sink + p.fn(iters);
    } else {
      pool.parallel_for(static_cast<size_t>(threads), [&](size_t) {
        const float v = p.fn(iters);
        g_sink.fetch_add(v, std::memory_order_relaxed);
      });
    }
  };
  const double best = best_time(o.runs, run);
  const double flops = static_cast<double>(iters) * p.ops_per_iter * threads;
  return flops / best * 1e-9;
}

struct FreeDeleter {
  void operator()(float* p) const { std::free(p); }
};
using Buffer = std::unique_ptr<float, FreeDeleter>;

Buffer alloc_buffer(size_t floats) {
  void* p = std::aligned_alloc(64, floats * sizeof(float));
  DLAS_CHECK(p != nullptr, ErrorKind::kRuntime, "peak: could not allocate ",
             floats * sizeof(float) >> 20, " MiB for the bandwidth probe");
  return Buffer(static_cast<float*>(p));
}

// Splits [0, n) into `parts` chunks whose sizes are multiples of 64 floats.
struct Chunk {
  size_t begin, size;
};
Chunk chunk(size_t n, size_t parts, size_t i) {
  const size_t blocks = n / 64;
  const size_t b0 = blocks * i / parts, b1 = blocks * (i + 1) / parts;
  return {b0 * 64, (b1 - b0) * 64};
}

void measure_bandwidth(PeakInfo& info, ThreadPool& pool, const PeakOptions& o) {
  const uint64_t l3 = cpu_info().l3_bytes;
  size_t bytes = o.bandwidth_buffer_bytes;
  if (bytes == 0) bytes = std::max<size_t>(size_t{64} << 20, static_cast<size_t>(4 * l3));
  const size_t n = bytes / sizeof(float) / 64 * 64;
  DLAS_CHECK(n >= 64, ErrorKind::kInvalidInput, "peak: bandwidth buffer of ", bytes,
             " bytes is too small");
  info.bandwidth_buffer_bytes = n * sizeof(float);
  Buffer a = alloc_buffer(n), b = alloc_buffer(n), c = alloc_buffer(n);
  const size_t parts = static_cast<size_t>(pool.threads());
  // First touch from the threads that stream the chunks later (page placement), and so
  // page faults are not timed.
  pool.parallel_for(parts, [&](size_t i) {
    const Chunk ch = chunk(n, parts, i);
    for (size_t k = ch.begin; k < ch.begin + ch.size; ++k) {
      a.get()[k] = 0.0f;
      b.get()[k] = 1.0f;
      c.get()[k] = 2.0f;
    }
  });
  const double gb = static_cast<double>(n * sizeof(float)) * 1e-9;
  const double t_read = best_time(o.runs, [&] {
    pool.parallel_for(parts, [&](size_t i) {
      const Chunk ch = chunk(n, parts, i);
      g_sink.fetch_add(pd::read_sum(b.get() + ch.begin, ch.size), std::memory_order_relaxed);
    });
  });
  const double t_copy = best_time(o.runs, [&] {
    pool.parallel_for(parts, [&](size_t i) {
      const Chunk ch = chunk(n, parts, i);
      std::memcpy(a.get() + ch.begin, b.get() + ch.begin, ch.size * sizeof(float));
    });
  });
  const double t_triad = best_time(o.runs, [&] {
    pool.parallel_for(parts, [&](size_t i) {
      const Chunk ch = chunk(n, parts, i);
      pd::triad(a.get() + ch.begin, b.get() + ch.begin, c.get() + ch.begin, 3.0f, ch.size);
    });
  });
  g_sink = g_sink + a.get()[n / 2];
  info.read_gbs = gb / t_read;
  info.copy_gbs = 2 * gb / t_copy;
  info.triad_gbs = 3 * gb / t_triad;
}

// The round trip of one cache line between this thread and another (unpinned, placed by the
// OS as the pool's workers are): the median of `runs` runs of 20000 round trips each. It is
// tens of ns between cores that share a cache and several hundred between distant ones.
double measure_handoff_ns(int runs) {
  constexpr int kTrips = 20000;
  struct alignas(64) Line {
    std::atomic<int> v{0};
  };
  Line line;
  std::vector<double> ns;
  for (int r = 0; r < runs; ++r) {
    line.v.store(0);
    std::thread other([&] {
      for (int i = 0; i < kTrips; ++i) {
        while (line.v.load(std::memory_order_acquire) != 1) {
        }
        line.v.store(0, std::memory_order_release);
      }
    });
    // Both threads running before the clock starts.
    const auto t0 = Clock::now();
    for (int i = 0; i < kTrips; ++i) {
      line.v.store(1, std::memory_order_release);
      while (line.v.load(std::memory_order_acquire) != 0) {
      }
    }
    const double s = seconds_since(t0);
    other.join();
    ns.push_back(s * 1e9 / kTrips);
  }
  std::sort(ns.begin(), ns.end());
  return ns[ns.size() / 2];
}

}  // namespace

PeakInfo measure_peak(const PeakOptions& options) {
  DLAS_CHECK(options.runs >= 1 && options.seconds_per_run > 0, ErrorKind::kInvalidInput,
             "peak: runs must be >= 1 and seconds_per_run > 0");
  const auto t0 = Clock::now();
  ThreadPool pool(options.threads);
  PeakInfo info;
  info.threads = pool.threads();
  // Let the clock ramp up before the first timed probe.
  best_time(1, [] { g_sink = g_sink + pd::fma_probe_scalar(2'000'000); });
  for (Isa isa : kAllIsas) {
    IsaPeak p;
    p.isa = isa;
    p.supported = isa_supported(isa);
    if (p.supported && base_isa(isa) != isa) {
      // Same f32 units as its base path: its f32 peak is the base's (already measured).
      const IsaPeak& base = info.isas.at(static_cast<size_t>(base_isa(isa)));
      p.gflops_single = base.gflops_single;
      p.gflops_all = base.gflops_all;
    } else if (p.supported) {
      const ProbeInfo probe = probe_for(isa);
      p.gflops_single = flops_probe(probe, pool, 1, options);
      p.gflops_all =
          info.threads == 1 ? p.gflops_single : flops_probe(probe, pool, info.threads, options);
    }
    info.isas.push_back(p);
  }
  struct UnitProbe {
    const char* name;
    Isa isa;
    ProbeInfo probe;
  };
  const UnitProbe unit_probes[] = {
      {"vnni-int8", Isa::kAvx512Vnni, {&pd::unit_probe_vnni_int8, pd::kChains * 64 * 2}},
      {"avx512-bf16", Isa::kAvx512Bf16, {&pd::unit_probe_bf16_dot, pd::kChains * 32 * 2}},
      {"avx512-fp16", Isa::kAvx512Fp16, {&pd::unit_probe_fp16, pd::kChains * 32 * 2}},
      {"amx-int8", Isa::kAmx, {&pd::unit_probe_amx_int8, 4 * 16 * 16 * 64 * 2}},
      {"amx-bf16", Isa::kAmx, {&pd::unit_probe_amx_bf16, 4 * 16 * 16 * 32 * 2}},
  };
  for (const UnitProbe& u : unit_probes) {
    UnitPeak p;
    p.name = u.name;
    p.isa = u.isa;
    p.supported = isa_supported(u.isa) && (u.isa != Isa::kAmx || amx_permitted());
    if (p.supported) {
      p.gops_single = flops_probe(u.probe, pool, 1, options);
      p.gops_all =
          info.threads == 1 ? p.gops_single : flops_probe(u.probe, pool, info.threads, options);
    }
    info.units.push_back(p);
  }
  measure_bandwidth(info, pool, options);
  if (info.threads > 1) info.handoff_ns = measure_handoff_ns(options.runs);
  info.seconds = seconds_since(t0);
  return info;
}

const PeakInfo& peak() {
  static const PeakInfo info = measure_peak();
  return info;
}

}  // namespace dlas

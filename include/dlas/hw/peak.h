// Measured machine peaks (DLAS layer 6): fp32 FLOP/s per ISA path and memory
// bandwidth, from short microbenchmarks. `dlas hw --peak` prints them and
// `dlas profile` divides achieved GFLOP/s by them, so a kernel's quality is
// quoted against what this machine really sustains, not a datasheet figure.
//
// Method: each probe is run as best-of-N short runs (the best run is the one
// least disturbed by other processes on a shared machine).
// - FLOP/s: one translation unit per ISA path runs 12 independent
//   multiply-add chains (vector FMAs for avx2/avx512, separate mul + add for
//   the scalar path, which is built without FMA): 12 chains cover
//   FMA latency (4-5 cycles) x throughput (2 per cycle) on current x86 cores.
//   Measured on one thread and on every thread of a ThreadPool.
// - Bandwidth: all threads stream over buffers of max(4 x L3, 64 MiB) each
//   (so caches cannot serve them): read (sum), copy (memcpy; counts bytes read
//   + written, as STREAM does) and triad a = b + s * c (3 arrays).
// - Handoff: the round trip of one cache line between two threads the OS places (median of
//   short runs): what each parallel loop's hand-off and every read of data another thread
//   wrote cost. Far-apart cores (another core complex or socket) show several times the
//   near figure.
#pragma once

#include <cstddef>
#include <string_view>
#include <vector>

#include "dlas/hw/isa.h"

namespace dlas {

struct IsaPeak {
  Isa isa = Isa::kScalar;
  bool supported = false;    // false: the CPU lacks the ISA, both numbers are 0
  double gflops_single = 0;  // one thread
  double gflops_all = 0;     // PeakInfo::threads threads
};

// A low-precision unit's measured peak, in G operations/s (2 per product), measured like the
// FMA probes: 12 chains of zmm vpdpbusd / vdpbf16ps / vfmadd231ph, or four AMX accumulator
// tiles fed by tdpbsud / tdpbf16ps.
struct UnitPeak {
  const char* name = "";   // "vnni-int8", "avx512-bf16", "avx512-fp16", "amx-int8", "amx-bf16"
  Isa isa = Isa::kScalar;  // the path that has the unit
  bool supported = false;  // false: the CPU lacks it, both numbers are 0
  double gops_single = 0, gops_all = 0;
};

struct PeakInfo {
  int threads = 1;                                   // "all threads": the default ThreadPool size
  std::vector<IsaPeak> isas;                         // one per kAllIsas entry, in that order
  double read_gbs = 0, copy_gbs = 0, triad_gbs = 0;  // GB/s = 1e9 bytes/s, all threads
  size_t bandwidth_buffer_bytes = 0;                 // size of each streamed buffer
  double handoff_ns = 0;  // cache-line round trip between two threads (0: one thread)
  double seconds = 0;                                // wall time the measurement took

  const IsaPeak& at(Isa isa) const { return isas.at(static_cast<size_t>(isa)); }
  // Peak GFLOP/s of the path on `threads` threads: the single-thread peak times threads,
  // capped at the all-threads peak (0 when unsupported).
  double gflops(Isa isa, int threads) const;

  std::vector<UnitPeak> units;  // every unit dlas knows, in the order above
  // The peak a kernel whose arithmetic is `compute` (conv_compute_name: "f32", "emulated",
  // "int8", "amx-int8", "native-bf16", "amx-bf16", "native-fp16") runs against on path isa
  // and `threads` threads: its unit's (int8 off AMX: the VNNI unit, where the path has
  // AVX512-VNNI), else the path's f32 FMA peak. Single-thread peak x threads, capped at
  // the all-threads one.
  double gops_for(std::string_view compute, Isa isa, int threads) const;
};

struct PeakOptions {
  int threads = 0;                    // <= 0: one per logical processor
  int runs = 5;                       // best of
  double seconds_per_run = 0.02;      // target length of one FMA run
  size_t bandwidth_buffer_bytes = 0;  // 0: max(4 x L3, 64 MiB)
};

// Runs the probes now (about 2-3 s with the defaults).
PeakInfo measure_peak(const PeakOptions& options = {});
// measure_peak() with default options, run once per process on first use; thread-safe.
const PeakInfo& peak();

}  // namespace dlas

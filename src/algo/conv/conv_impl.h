// Internal: what the per-type implementation files of the conv algorithms share. An
// implementation is a ConvAlgorithm for one ConvTypes (the list's rows dispatch to it);
// its prepared convs run on typed pointers through these bases.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <utility>

#include "dlas/algo/conv.h"
#include "dlas/hw/thread_pool.h"

namespace dlas {

// Work items per thread a blocked kernel's run aims at when its units (tiles, rows) are
// many: several units per item, so the pool's per-item cost stays small next to a unit's
// work, and still enough items to balance two threads on a shared machine.
constexpr int64_t kItemsPerThread = 16;

// Output pixels per register tile the blocked kernels' `pw` knob offers (direct f32 and bf16,
// winograd's GEMM).
inline constexpr int64_t kBlockedTilePixels[] = {2, 3, 4, 5, 6, 7, 8, 10, 12, 14, 16, 24};

// The untuned register tile of the blocked kernels: among nv = 1..max_nv output blocks (at
// most `blocks`), each with the widest tile of at most cap(nv) pixels spread evenly over
// `cols`, the one with the most FMAs per load (nv * px / (nv + px)), counting only the real
// blocks of the last group of nv; px then rounded down to a knob value. Returns {nv, pw}.
template <class Cap>
std::pair<int64_t, int64_t> most_fmas_per_load(int64_t blocks, int64_t cols, int max_nv, Cap cap) {
  auto ceil_div = [](int64_t a, int64_t b) { return (a + b - 1) / b; };
  int64_t best_nv = 1, best_px = 2;
  double best = -1;
  for (int nv = 1; nv <= max_nv && nv <= blocks; ++nv) {
    const int64_t c = cap(nv);
    if (c < 1) continue;
    const int64_t px = ceil_div(cols, ceil_div(cols, c));
    const double used =
        static_cast<double>(blocks) / static_cast<double>(ceil_div(blocks, nv) * nv);
    const double score = used * static_cast<double>(nv * px) / static_cast<double>(nv + px);
    if (score > best + 1e-9) best = score, best_nv = nv, best_px = px;
  }
  int64_t pw = kBlockedTilePixels[0];
  for (int64_t v : kBlockedTilePixels)
    if (v <= best_px) pw = v;
  return {best_nv, pw};
}

// How a blocked kernel splits an image's work over threads. The pool gives each thread one
// contiguous run of items, so the item order decides which part of the tensors a thread
// touches:
// - spatially (output rows outermost, channels inner): each thread computes every channel
//   of its band of rows, and reads only its band (plus a halo) of an input the layer
//   before wrote the same way. Activations stay in the cache of the core that made them.
// - by channels (block groups outermost): each thread reads half the weights, but every
//   pixel of the input.
// When the two vCPUs sit on different core complexes or sockets, data moving between
// them costs several times more (a cache-line round trip 330-360 ns against 50-80 ns in
// the near placement, reads of lines the other core wrote 18 GB/s against 39, measured on
// a 2-vCPU AMD EPYC Zen 4 VM that the host moves between the two), and a channel split
// moves half of every layer's input across. So layers split spatially where their output
// plane has at least kSpatialSplitPixels pixels, and by channels on smaller planes, whose
// data is small and whose weights each thread would otherwise stream in full; a layer's
// input then comes split the way it reads it, except after the one stride-2 layer that
// crosses the threshold. A layer whose weights exceed twice its activations splits by
// channels on any plane. DLAS_SPLIT=spatial|channels forces one for experiments.
constexpr int64_t kSpatialSplitPixels = 100;
bool split_spatially(int64_t out_pixels, int64_t activation_bytes, int64_t weight_bytes);

// One image of `blocks` channel blocks of `lanes` elements each ([blocks][h][w][lanes]; lanes
// 1: NCHW planes) copied into [blocks][hp][wp][lanes] at row pad_t and column pad_l, the
// rest set to `fill` (0; int8: the input's zero point): the padded input the blocked direct
// kernels read. Parallel over bands of rows, every block of a row on the thread whose band it
// is (see split_spatially).
template <class T>
void pad_blocked_image(const T* x, T* dst, int64_t blocks, int64_t lanes, int64_t h, int64_t w,
                       int64_t hp, int64_t wp, int64_t pad_t, int64_t pad_l, ThreadPool& pool,
                       T fill = T(0)) {
  pool.parallel_for(static_cast<size_t>(hp), [&](size_t row) {
    const int64_t py = static_cast<int64_t>(row);
    for (int64_t cb = 0; cb < blocks; ++cb) {
      T* drow = dst + (cb * hp + py) * wp * lanes;
      const int64_t iy = py - pad_t;
      if (iy < 0 || iy >= h) {
        std::fill_n(drow, wp * lanes, fill);
        continue;
      }
      const int64_t left = std::min(pad_l, wp);
      const int64_t copy = std::max<int64_t>(0, std::min(w, wp - pad_l));
      std::fill_n(drow, left * lanes, fill);
      std::memcpy(drow + left * lanes, x + (cb * h + iy) * w * lanes,
                  sizeof(T) * static_cast<size_t>(copy * lanes));
      const int64_t done = left + copy;
      if (done < wp) std::fill_n(drow + done * lanes, (wp - done) * lanes, fill);
    }
  });
}

// A prepared conv whose input, output and residual are all of element type T.
template <class T>
class TypedPreparedConv : public PreparedConv {
 public:
  void run(const void* x, void* y, const void* residual, void* workspace,
           ThreadPool& pool) const final {
    run_typed(static_cast<const T*>(x), static_cast<T*>(y), static_cast<const T*>(residual),
              workspace, pool);
  }
  // x: [n][c][h][w]; y: [n][k][oh][ow]; residual: like y, or null. Must not allocate.
  virtual void run_typed(const T* x, T* y, const T* residual, void* workspace,
                         ThreadPool& pool) const = 0;
};

// f32 implementations.
class PreparedF32Conv : public TypedPreparedConv<float> {
 public:
  ConvCompute compute() const final { return ConvCompute::kF32; }
};

// 16-bit (f16 / bf16) implementations: their compute() says emulated or native.
using PreparedH16Conv = TypedPreparedConv<uint16_t>;

namespace hconv_detail {
// The 16-bit `direct` conv's widened f32 twin (widened_h16.cc).
const ConvAlgorithm& widened_direct_hconv_algorithm();
// Whether the 16-bit `direct` conv runs its AMX implicit GEMM for p on path isa
// (direct_h16.cc): bf16, stride <= 2, no dilation, one group, C >= 16, and at least one
// tile row of output pixels (a 1x1 plane pads each tile row from 1 pixel to 16).
inline constexpr int64_t kAmxDirectMinPixels = 16;
bool amx_direct_applies(const ConvProblem& p, Isa isa);
// Whether the 16-bit `direct` conv runs natively on bf16 blocks for p on path isa
// (direct_nchwc_h16.cc): bf16 in nchw16c in and out, one group, a path with AVX512-BF16;
// and the prepared conv (knobs: the widened twin's).
bool native_blocked_direct_applies(const ConvProblem& p, Isa isa);
// Its untuned tile along a row: the most dot products per load within its registers.
Knobs native_blocked_direct_default_knobs(const ConvProblem& p, Isa isa);
std::unique_ptr<PreparedConv> prepare_native_blocked_direct(const ConvProblem& p,
                                                            const ConvWeights& w,
                                                            const Knobs& knobs, Isa isa);
}  // namespace hconv_detail

}  // namespace dlas

// Internal: what the per-type implementation files of the conv algorithms share. An
// implementation is a ConvAlgorithm for one ConvTypes (the list's rows dispatch to it);
// its prepared convs run on typed pointers through these bases.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <type_traits>
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

// The widest tile of at most `cap` pixels that spreads `cols` evenly over its tiles (as
// few tiles as cap allows, equally wide), rounded down to a `pw` knob value.
inline int64_t even_tile_pixels(int64_t cols, int64_t cap) {
  auto ceil_div = [](int64_t a, int64_t b) { return (a + b - 1) / b; };
  const int64_t px = ceil_div(cols, ceil_div(cols, std::max<int64_t>(cap, 1)));
  int64_t pw = kBlockedTilePixels[0];
  for (int64_t v : kBlockedTilePixels)
    if (v <= px) pw = v;
  return pw;
}

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
  return {best_nv, even_tile_pixels(best_px, best_px)};
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
// The plane rule alone (and DLAS_SPLIT), for a layer whose weights each thread reads from
// cache anyway (the int8 winograd's, winograd_qs8.cc).
inline bool split_spatially(int64_t out_pixels) { return split_spatially(out_pixels, 1, 0); }

// One image of `blocks` channel blocks of `lanes` elements each ([blocks][h][w][lanes]; lanes
// 1: NCHW planes) copied into [blocks][hp][wp][lanes] at row pad_t and column pad_l, the
// rest set to `fill` (0; int8: the input's zero point): the padded input the blocked direct
// kernels read. Parallel over bands of rows, every block of a row on the thread whose band it
// is (see split_spatially). S -> T converts each element (u8 -> int16: the AVX2 int8 kernels'
// widened input).
template <class S, class T>
void pad_blocked_image(const S* x, T* dst, int64_t blocks, int64_t lanes, int64_t h, int64_t w,
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
      const S* src = x + (cb * h + iy) * w * lanes;
      if constexpr (std::is_same_v<S, T>) {
        std::memcpy(drow + left * lanes, src, sizeof(T) * static_cast<size_t>(copy * lanes));
      } else {
        T* __restrict d = drow + left * lanes;
        for (int64_t i = 0; i < copy * lanes; ++i) d[i] = static_cast<T>(src[i]);
      }
      const int64_t done = left + copy;
      if (done < wp) std::fill_n(drow + done * lanes, (wp - done) * lanes, fill);
    }
  });
}

// A 1x1 stride-1 unpadded conv: the blocked direct kernels (f32, bf16, int8) run it as one
// GEMM over the plane.
inline bool blocked_flat_1x1(const ConvProblem& p) {
  return p.kh == 1 && p.kw == 1 && p.stride_h == 1 && p.stride_w == 1 && p.pad_t == 0 &&
         p.pad_l == 0 && p.pad_b == 0 && p.pad_r == 0;
}

// The conv groups the blocked direct kernels (f32, bf16, int8) run on b-channel blocks: one
// group; groups of whole blocks, in and out (a block group reduces over its conv group's
// input blocks only); or groups of kMinSubBlockGroup or more channels that divide a block,
// as many in as out (regnet's and resnext's group widths of 4 and 8 on 16 lanes: one block
// group per block, zero weights between its conv groups). At the narrowest, a block of b
// lanes issues b / group dot products per useful one (4x on 16 lanes at 4 channels per
// group); still ahead of NCHW: regnet_y_400mf's 8-channel groups ran at 37% of the f32 peak
// in real FLOPs on blocks against 12% on NCHW gemm (AMD EPYC Zen 4, 2 threads).
inline constexpr int64_t kMinSubBlockGroup = 4;
inline bool blocked_sub_block_groups(const ConvProblem& p, int64_t b) {
  const int64_t cpg = p.c / p.groups;
  return p.groups > 1 && p.c == p.k && cpg >= kMinSubBlockGroup && cpg < b && b % cpg == 0;
}
inline bool blocked_groups_supported(const ConvProblem& p, int64_t b) {
  return p.groups == 1 || ((p.c / p.groups) % b == 0 && (p.k / p.groups) % b == 0) ||
         blocked_sub_block_groups(p, b);
}
// The conv groups the kernels' block groups follow: the conv's, or one per output block.
inline int64_t blocked_conv_groups(const ConvProblem& p, int64_t b) {
  return blocked_sub_block_groups(p, b) ? (p.k + b - 1) / b : p.groups;
}

// The tile geometry the blocked direct kernels share: `rows` output rows of `cols` pixels
// (a flat 1x1 conv: one row of the whole plane), reading an input of hp x wp pixels per
// block -- a copy with zero-point borders when the conv is padded, else the input itself.
struct BlockedRowGeometry {
  int64_t oh = 0, ow = 0, rows = 0, cols = 0, hp = 0, wp = 0;
  bool flat = false, padded = false;
  explicit BlockedRowGeometry(const ConvProblem& p)
      : oh(p.oh()), ow(p.ow()), flat(blocked_flat_1x1(p)) {
    rows = flat ? 1 : oh;
    cols = flat ? oh * ow : ow;
    padded = !flat && (p.pad_t || p.pad_l || p.pad_b || p.pad_r);
    hp = padded ? (oh - 1) * p.stride_h + (p.kh - 1) * p.dil_h + 1 : p.h;
    wp = padded ? (ow - 1) * p.stride_w + (p.kw - 1) * p.dil_w + 1 : p.w;
    if (flat) wp = p.h * p.w, hp = 1;
  }
};

// Runs fn(group, row, t0, t1) over a blocked direct kernel's work: `groups` block groups x
// `rows` rows x `tiles` tiles per row, in items of up to `chunk` consecutive tiles of one row
// and block group, so a small tile's work is not dwarfed by the pool's per-item cost (a 1x1
// on 16 input channels: 128 FMAs a tile): about kItemsPerThread items per thread where there
// is work for them (mobilenetv2's 1x1 layers, dlas_bench_conv, Zen 3, 2 threads, 3
// interleaved rounds on a noisy VM: 16 items per thread ran a median 0.88x of one tile per
// item, 4 per thread 1.0x, 64 0.9x; the block groups innermost on the flat 1x1, reusing the
// input chunk across groups, 0.92x). Split spatially: (row, run of tiles) outermost, every
// block group of it on one thread; by channels: block groups outermost (split_spatially).
template <class Fn>
void for_each_tile_run(ThreadPool& pool, int64_t groups, int64_t rows, int64_t tiles, bool spatial,
                       Fn&& fn) {
  const int64_t units = groups * rows * tiles;
  const int64_t chunk = std::clamp<int64_t>(
      units / (static_cast<int64_t>(pool.threads()) * kItemsPerThread), 1, tiles);
  const int64_t chunks = (tiles + chunk - 1) / chunk;
  pool.parallel_for(static_cast<size_t>(groups * rows * chunks), [&](size_t item) {
    const int64_t i = static_cast<int64_t>(item);
    const int64_t g = spatial ? i % groups : i / (rows * chunks);
    const int64_t rc = spatial ? i / groups : i % (rows * chunks);
    const int64_t row = rc / chunks, t0 = rc % chunks * chunk;
    fn(g, row, t0, std::min(tiles, t0 + chunk));
  });
}

// Splits tiles [t0, t1) of one row of `cols` pixels, in tiles of `pw`, into kernel calls: runs
// of at most `run` full tiles in one call each, the row's last, narrower tile in a call of its
// own. fn(c0, n, px): the call's first pixel, its tiles and the pixels of each.
template <class Fn>
void for_each_tile_call(int64_t t0, int64_t t1, int64_t cols, int64_t pw, int64_t run, Fn&& fn) {
  const int64_t full = cols / pw;  // tiles of pw pixels in a row
  for (int64_t t = t0; t < t1;) {
    const int64_t c0 = t * pw;
    const int64_t n = t < full ? std::min({run, t1 - t, full - t}) : 1;
    fn(c0, n, t < full ? pw : cols - c0);
    t += n;
  }
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

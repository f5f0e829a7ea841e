// The AMX tile plumbing every AMX kernel family (int8 and bf16 microkernels) and the AMX peak
// probe share -- included only by *__amx.cc units, built with the AMX flags (the
// permission to use the tiles: amx.h): palette 1 with all 8 tiles 16 rows x 64 bytes, and tile
// zero, load and store by tile number. GCC pastes a tile number into the asm text, so the number is
// a template argument dispatched through literal-number chains. A family's tile policy derives from
// AmxTiles and adds its dot product (tdpbsud, tdpbf16ps) as dp<C, A, B>().
#pragma once

#include <immintrin.h>

#include <cstddef>
#include <cstdint>

namespace {

struct AmxTiles {
  // Loaded per kernel call: cheap next to a call's tile products, and it leaves no state
  // the next kernel on this thread depends on. `k_bytes` (a multiple of 4, at most 64): the
  // reduction depth of one product, the A tiles' (4, 5) row bytes and the B tiles' (6, 7)
  // rows times 4; below 64 for a conv whose every input channel fits one shallower step.
  static void configure(int k_bytes = 64) {
    struct alignas(64) Config {
      uint8_t palette, start_row, reserved[14];
      uint16_t colsb[16];
      uint8_t rows[16];
    } cfg{};
    cfg.palette = 1;
    for (int t = 0; t < 8; ++t) cfg.colsb[t] = 64, cfg.rows[t] = 16;
    cfg.colsb[4] = cfg.colsb[5] = static_cast<uint16_t>(k_bytes);
    cfg.rows[6] = cfg.rows[7] = static_cast<uint8_t>(k_bytes / 4);
    _tile_loadconfig(&cfg);
  }
  template <int T>
  static void zero() {
    if constexpr (T == 0) _tile_zero(0);
    if constexpr (T == 1) _tile_zero(1);
    if constexpr (T == 2) _tile_zero(2);
    if constexpr (T == 3) _tile_zero(3);
  }
  template <int T>
  static void load(const void* p, size_t stride) {
    if constexpr (T == 0) _tile_loadd(0, p, stride);
    if constexpr (T == 1) _tile_loadd(1, p, stride);
    if constexpr (T == 2) _tile_loadd(2, p, stride);
    if constexpr (T == 3) _tile_loadd(3, p, stride);
    if constexpr (T == 4) _tile_loadd(4, p, stride);
    if constexpr (T == 5) _tile_loadd(5, p, stride);
    if constexpr (T == 6) _tile_loadd(6, p, stride);
    if constexpr (T == 7) _tile_loadd(7, p, stride);
  }
  // The implicit GEMMs' next B tiles into L1: `rows` rows `stride` bytes apart, two runs of 16
  // uint32 (b1 = b0 + 16 pixels where the runs are consecutive), three 64-byte lines a row
  // at most. Their rows sit a whole channel plane apart, beyond the hardware prefetcher's
  // reach; prefetched one step ahead, resnet18-cifar's bf16 and int8 layers run about a
  // quarter faster (docs/benchmarks.md).
  static void prefetch_rows(const uint32_t* b0, const uint32_t* b1, size_t stride, int rows = 16) {
    const char* n0 = reinterpret_cast<const char*>(b0);
    const char* n1 = reinterpret_cast<const char*>(b1);
    for (int r = 0; r < rows; ++r) {
      __builtin_prefetch(n0 + r * stride, 0, 3);
      __builtin_prefetch(n0 + r * stride + 63, 0, 3);
      __builtin_prefetch(n1 + r * stride + 63, 0, 3);
    }
  }
  template <int T>
  static void store(void* p, size_t stride) {
    if constexpr (T == 0) _tile_stored(0, p, stride);
    if constexpr (T == 1) _tile_stored(1, p, stride);
    if constexpr (T == 2) _tile_stored(2, p, stride);
    if constexpr (T == 3) _tile_stored(3, p, stride);
  }
};

}  // namespace

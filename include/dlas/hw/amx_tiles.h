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
  // the next kernel on this thread depends on.
  static void configure() {
    struct alignas(64) Config {
      uint8_t palette, start_row, reserved[14];
      uint16_t colsb[16];
      uint8_t rows[16];
    } cfg{};
    cfg.palette = 1;
    for (int t = 0; t < 8; ++t) cfg.colsb[t] = 64, cfg.rows[t] = 16;
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
  template <int T>
  static void store(void* p, size_t stride) {
    if constexpr (T == 0) _tile_stored(0, p, stride);
    if constexpr (T == 1) _tile_stored(1, p, stride);
    if constexpr (T == 2) _tile_stored(2, p, stride);
    if constexpr (T == 3) _tile_stored(3, p, stride);
  }
};

}  // namespace

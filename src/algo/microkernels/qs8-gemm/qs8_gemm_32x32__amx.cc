// AMX-INT8 kernel: 32x32 int32 tile in four accumulator tiles (qs8_gemm_amx.h); the
// caller (gemm_qconv.cc's prepare) has obtained the tile-data permission (src/hw/amx.h).
#include <immintrin.h>

#include "algo/microkernels/qs8-gemm/qs8_gemm.h"
#include "algo/microkernels/qs8-gemm/qs8_gemm_amx.h"

namespace {

struct Tiles {
  // Palette 1, all 8 tiles 16 rows x 64 bytes. Loaded per call: cheap next to a call's
  // 32 x 32 x kq*4 MACs, and it leaves no state the next kernel on this thread depends on.
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
  // GCC's tile intrinsics paste their tile number into the asm text: literal numbers only,
  // hence the if-constexpr chains over the tiles the kernel uses.
  template <int T>
  static void zero() {
    if constexpr (T == 0) _tile_zero(0);
    if constexpr (T == 1) _tile_zero(1);
    if constexpr (T == 2) _tile_zero(2);
    if constexpr (T == 3) _tile_zero(3);
  }
  template <int T>
  static void load(const void* p, size_t stride) {
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
  template <int C, int A, int B>
  static void dp() {
    static_assert(A == 4 || A == 5);
    static_assert(B == 6 || B == 7);
    if constexpr (C == 0) _tile_dpbsud(0, 4, 6);
    if constexpr (C == 1) _tile_dpbsud(1, 4, 7);
    if constexpr (C == 2) _tile_dpbsud(2, 5, 6);
    if constexpr (C == 3) _tile_dpbsud(3, 5, 7);
    static_assert((C == 0 && A == 4 && B == 6) || (C == 1 && A == 4 && B == 7) ||
                  (C == 2 && A == 5 && B == 6) || (C == 3 && A == 5 && B == 7));
  }
};

struct Policy {
  static constexpr int kLanes = 16;
  typedef QVec<16>::f32 F;
  static F fma(F a, F b, F c) { return (F)_mm512_fmadd_ps((__m512)a, (__m512)b, (__m512)c); }
};

}  // namespace

namespace dlas::ukernel {

void qs8_gemm_32x32__amx(size_t m, size_t n, size_t kq, const void* a, const void* b, void* c,
                         size_t ldc, const QS8GemmParams& p) {
  qs8_gemm_amx_32x32<Tiles, Policy>(m, n, kq, a, b, c, ldc, p);
}

}  // namespace dlas::ukernel

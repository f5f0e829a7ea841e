// AMX-INT8 kernel: 32x32 int32 tile in four accumulator tiles (qs8_gemm_amx.h); the
// caller (gemm_qconv.cc's prepare) has obtained the tile-data permission (src/hw/amx.h).
#include <immintrin.h>

#include "algo/microkernels/amx_tiles.h"
#include "algo/microkernels/qs8-gemm/qs8_gemm.h"
#include "algo/microkernels/qs8-gemm/qs8_gemm_amx.h"

namespace {

struct Tiles : AmxTiles {
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

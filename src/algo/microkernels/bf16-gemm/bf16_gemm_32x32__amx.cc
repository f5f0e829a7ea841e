// AMX-BF16 bf16 GEMM, 32x32: four f32 accumulator tiles fed by tdpbf16ps (bf16_gemm_amx.h),
// with a weight-streaming twin (32x32s: prefetches the weight panel ahead),
// and its implicit-GEMM twin for the direct convs (bf16_dconv_32x32__amx).
// The caller (gemm_h16.cc's prepare) has obtained the tile-data permission (dlas/hw/amx.h).
#include <immintrin.h>

#include "algo/microkernels/bf16-gemm/bf16_gemm_amx.h"
#include "algo/microkernels/h16-gemm/h16_gemm.h"
#include "dlas/hw/amx_tiles.h"

namespace {

struct Tiles : AmxTiles {
  template <int C, int A, int B>
  static void dp() {
    static_assert((C == 0 && A == 4 && B == 6) || (C == 1 && A == 4 && B == 7) ||
                  (C == 2 && A == 5 && B == 6) || (C == 3 && A == 5 && B == 7));
    if constexpr (C == 0) _tile_dpbf16ps(0, 4, 6);
    if constexpr (C == 1) _tile_dpbf16ps(1, 4, 7);
    if constexpr (C == 2) _tile_dpbf16ps(2, 5, 6);
    if constexpr (C == 3) _tile_dpbf16ps(3, 5, 7);
  }
};

}  // namespace

namespace dlas::ukernel {

void bf16_gemm_32x32__amx(size_t m, size_t n, size_t k, const uint16_t* a, const uint16_t* b,
                          size_t flush, float* c, size_t ldc, bool accumulate) {
  bf16_gemm_amx_32x32<Tiles, false>(m, n, k, a, b, flush, c, ldc, accumulate);
}

void bf16_gemm_32x32s__amx(size_t m, size_t n, size_t k, const uint16_t* a, const uint16_t* b,
                           size_t flush, float* c, size_t ldc, bool accumulate) {
  bf16_gemm_amx_32x32<Tiles, true>(m, n, k, a, b, flush, c, ldc, accumulate);
}

void bf16_dconv_32x32__amx(size_t steps, const uint16_t* a, const uint32_t* b0, const uint32_t* b1,
                           const int64_t* boff, size_t bstride, float* c, size_t ldc, int k_bytes,
                           bool configure) {
  bf16_dconv_amx_32x32<Tiles>(steps, a, b0, b1, boff, bstride, c, ldc, k_bytes, configure);
}

}  // namespace dlas::ukernel

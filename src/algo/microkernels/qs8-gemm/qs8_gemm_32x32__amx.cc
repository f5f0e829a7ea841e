// AMX-INT8 kernels: the 32x32 int32 gemm tile in four accumulator tiles (qs8_gemm_amx.h), and
// its implicit-GEMM twin for the direct convs (qs8_dconv_32x32__amx); the
// caller (gemm_qconv.cc's prepare) has obtained the tile-data permission (src/hw/amx.h).
#include <immintrin.h>

#include "algo/microkernels/qs8-gemm/qs8_gemm.h"
#include "algo/microkernels/qs8-gemm/qs8_gemm_amx.h"
#include "dlas/hw/amx_tiles.h"

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

namespace {

// One run of 16 virtual pixels of one output row: acc (int32) + init, requantized with the
// gemm store's arithmetic (qs8_gemm_template.h: one FMA, clamp, round to nearest even). The
// lanes under k are the run's real pixels, consecutive in the output: they are compressed
// to the front and stored as popcount(k) bytes at c (the residual expanded from r alike).
inline void requant_run(__m512i acc, __mmask16 k, bool full, int32_t init, float mult,
                        const uint8_t* r, uint8_t* c, const dlas::ukernel::QS8GemmParams& p) {
  const __mmask16 front = static_cast<__mmask16>((1u << __builtin_popcount(k)) - 1);
  __m512 t = _mm512_setzero_ps();
  if (r) {
    const __m128i rb = _mm_maskz_loadu_epi8(front, r);
    __m512i ri = p.r_signed ? _mm512_cvtepi8_epi32(rb) : _mm512_cvtepu8_epi32(rb);
    if (!full) ri = _mm512_maskz_expand_epi32(k, ri);
    t = _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_sub_epi32(ri, _mm512_set1_epi32(p.r_zp))),
                      _mm512_set1_ps(p.rm));
  }
  acc = _mm512_add_epi32(acc, _mm512_set1_epi32(init));
  __m512 f = _mm512_fmadd_ps(_mm512_cvtepi32_ps(acc), _mm512_set1_ps(mult), t);
  f = _mm512_min_ps(_mm512_max_ps(f, _mm512_set1_ps(p.vlo)), _mm512_set1_ps(p.vhi));
  __m512i q =
      _mm512_add_epi32(_mm512_cvt_roundps_epi32(f, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC),
                       _mm512_set1_epi32(p.y_zp));
  if (!full) q = _mm512_maskz_compress_epi32(k, q);
  _mm_mask_storeu_epi8(c, front, _mm512_cvtepi32_epi8(q));
}

}  // namespace

namespace dlas::ukernel {

void qs8_dconv_32x32__amx(size_t m, size_t steps, const uint8_t* a, const uint32_t* b0,
                          const uint32_t* b1, const int64_t* boff, size_t bstride,
                          const QS8DconvOut& out, size_t ldc, const QS8GemmParams& p,
                          bool configure) {
  if (configure) Tiles::configure();
  Tiles::zero<0>();
  Tiles::zero<1>();
  Tiles::zero<2>();
  Tiles::zero<3>();
  for (size_t s = 0; s < steps; ++s) {
    if (s + 1 < steps) Tiles::prefetch_rows(b0 + boff[s + 1], b1 + boff[s + 1], bstride);
    Tiles::load<4>(a, 64);            // channels 0..15, 64 input channels each
    Tiles::load<5>(a + 16 * 64, 64);  // channels 16..31
    Tiles::load<6>(b0 + boff[s], bstride);
    Tiles::load<7>(b1 + boff[s], bstride);
    Tiles::dp<0, 4, 6>();
    Tiles::dp<1, 4, 7>();
    Tiles::dp<2, 5, 6>();
    Tiles::dp<3, 5, 7>();
    a += 32 * 64;
  }
  alignas(64) int32_t buf[32][32];
  Tiles::store<0>(&buf[0][0], 32 * 4);
  Tiles::store<1>(&buf[0][16], 32 * 4);
  Tiles::store<2>(&buf[16][0], 32 * 4);
  Tiles::store<3>(&buf[16][16], 32 * 4);
  for (int r = 0; r < out.runs; ++r) {
    const __mmask16 k = out.mask[r];
    const bool full = k == 0xffff;
    for (size_t i = 0; i < m; ++i)
      requant_run(_mm512_load_si512(&buf[i][16 * r]), k, full, p.init[i], p.mult[i],
                  p.residual ? out.r_at[r] + i * ldc : nullptr, out.c[r] + i * ldc, p);
  }
}

}  // namespace dlas::ukernel

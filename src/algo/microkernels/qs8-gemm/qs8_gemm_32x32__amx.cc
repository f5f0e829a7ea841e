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

// The requantizing store's constants, in registers for a whole tile (read through the
// params, the compiler reloads them after every byte store, which may alias them).
struct Requant {
  __m512 vlo, vhi, rm;
  __m512i y_zp, r_zp;
  bool r_signed;
  explicit Requant(const dlas::ukernel::QS8GemmParams& p)
      : vlo(_mm512_set1_ps(p.vlo)),
        vhi(_mm512_set1_ps(p.vhi)),
        rm(_mm512_set1_ps(p.rm)),
        y_zp(_mm512_set1_epi32(p.y_zp)),
        r_zp(_mm512_set1_epi32(p.r_zp)),
        r_signed(p.r_signed) {}
};

// One run of 16 virtual pixels of one output row: acc (int32) + init, requantized with the
// gemm store's arithmetic (qs8_gemm_template.h: one FMA, clamp, round to nearest even). The
// lanes under k are the run's real pixels, consecutive in the output: they are compressed
// to the front and stored as popcount(k) bytes at c (the residual expanded from r alike).
// Full: every lane real (k == 0xffff), the common case, with no compress or mask.
template <bool Full, bool Residual>
inline void requant_run(__m512i acc, __mmask16 k, __m512i init, __m512 mult, const uint8_t* r,
                        uint8_t* c, const Requant& q) {
  const __mmask16 front =
      Full ? __mmask16(0xffff) : static_cast<__mmask16>((1u << __builtin_popcount(k)) - 1);
  __m512 t = _mm512_setzero_ps();
  if constexpr (Residual) {
    const __m128i rb = Full ? _mm_loadu_si128(reinterpret_cast<const __m128i*>(r))
                            : _mm_maskz_loadu_epi8(front, r);
    __m512i ri = q.r_signed ? _mm512_cvtepi8_epi32(rb) : _mm512_cvtepu8_epi32(rb);
    if (!Full) ri = _mm512_maskz_expand_epi32(k, ri);
    t = _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_sub_epi32(ri, q.r_zp)), q.rm);
  }
  __m512 f = _mm512_fmadd_ps(_mm512_cvtepi32_ps(_mm512_add_epi32(acc, init)), mult, t);
  f = _mm512_min_ps(_mm512_max_ps(f, q.vlo), q.vhi);
  __m512i v = _mm512_add_epi32(
      _mm512_cvt_roundps_epi32(f, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC), q.y_zp);
  if constexpr (Full) {
    _mm_storeu_si128(reinterpret_cast<__m128i*>(c), _mm512_cvtepi32_epi8(v));
  } else {
    v = _mm512_maskz_compress_epi32(k, v);
    _mm_mask_storeu_epi8(c, front, _mm512_cvtepi32_epi8(v));
  }
}

// The tile's m rows of its runs (buf: 32 x 32 int32, run r in columns 16r .. 16r + 15).
template <bool Full, bool Residual>
inline void requant_tile(const int32_t (*buf)[32], size_t m, const dlas::ukernel::QS8DconvOut& out,
                         size_t ldc, const dlas::ukernel::QS8GemmParams& p) {
  const Requant q(p);
  const int runs = out.runs;
  uint8_t* c0 = out.c[0];
  uint8_t* c1 = out.c[1];
  const uint8_t* r0 = out.r_at[0];
  const uint8_t* r1 = out.r_at[1];
  const __mmask16 k0 = out.mask[0], k1 = out.mask[1];
  for (size_t i = 0; i < m; ++i) {
    const __m512i init = _mm512_set1_epi32(p.init[i]);
    const __m512 mult = _mm512_set1_ps(p.mult[i]);
    const size_t o = i * ldc;
    requant_run<Full, Residual>(_mm512_load_si512(&buf[i][0]), k0, init, mult,
                                Residual ? r0 + o : nullptr, c0 + o, q);
    if (runs > 1)
      requant_run<Full, Residual>(_mm512_load_si512(&buf[i][16]), k1, init, mult,
                                  Residual ? r1 + o : nullptr, c1 + o, q);
  }
}

}  // namespace

namespace dlas::ukernel {

void qs8_dconv_32x32__amx(size_t m, size_t steps, const uint8_t* a, const uint32_t* b0,
                          const uint32_t* b1, const int64_t* boff, size_t bstride,
                          const QS8DconvOut& out, size_t ldc, const QS8GemmParams& p, int k_bytes,
                          bool configure) {
  if (configure) Tiles::configure(k_bytes);
  Tiles::zero<0>();
  Tiles::zero<1>();
  Tiles::zero<2>();
  Tiles::zero<3>();
  for (size_t s = 0; s < steps; ++s) {
    if (s + 1 < steps)
      Tiles::prefetch_rows(b0 + boff[s + 1], b1 + boff[s + 1], bstride, k_bytes / 4);
    Tiles::load<4>(a, 64);            // channels 0..15, up to 64 input channels each
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
  const bool full = out.mask[0] == 0xffff && (out.runs < 2 || out.mask[1] == 0xffff);
  if (full)
    p.residual ? requant_tile<true, true>(buf, m, out, ldc, p)
               : requant_tile<true, false>(buf, m, out, ldc, p);
  else
    p.residual ? requant_tile<false, true>(buf, m, out, ldc, p)
               : requant_tile<false, false>(buf, m, out, ldc, p);
}

}  // namespace dlas::ukernel

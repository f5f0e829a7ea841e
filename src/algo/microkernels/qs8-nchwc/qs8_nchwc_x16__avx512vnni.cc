// AVX512-VNNI blocked int8 direct kernels: nchw16c u8 activations, one zmm of int32
// accumulators per output-channel block and pixel, vpdpbusd per input-channel quad
// (qs8_nchwc.h).
#include <immintrin.h>

#include <cstring>

#include "algo/microkernels/blocked_tile_select.h"
#include "algo/microkernels/qs8-nchwc/qs8_nchwc.h"

// GCC 12 reports the AVX-512 intrinsics' own "undefined" source operand (__Y = __Y in
// avx512fintrin.h) as uninitialized once they are inlined here; it is never read.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

namespace dlas::ukernel {
namespace {

// The 4 quad steps of one tap of one input block, fully unrolled: NV weight vectors, each
// pixel's quad broadcast into them.
template <int NV, int P, int S>
[[gnu::always_inline]] inline void quad_steps(__m512i (&acc)[P][NV], const uint8_t* xt,
                                              const int8_t* wt) {
#pragma GCC unroll 4
  for (int q = 0; q < 4; ++q) {
    __m512i wv[NV];
    for (int v = 0; v < NV; ++v) wv[v] = _mm512_load_si512(wt + (q * NV + v) * 64);
#pragma GCC unroll 32  // whatever P: GCC fully unrolls at most 16 iterations by itself
    for (int p = 0; p < P; ++p) {
      int32_t quad;
      std::memcpy(&quad, xt + p * S * 16 + 4 * q, sizeof quad);
      const __m512i b = _mm512_set1_epi32(quad);
      for (int v = 0; v < NV; ++v) acc[p][v] = _mm512_dpbusd_epi32(acc[p][v], b, wv[v]);
    }
  }
}

template <int NV, int P, int S>
void tile(const QS8NchwcArgs& a, const QS8GemmParams& prm, const uint8_t* x, const int8_t* w,
          uint8_t* y) {
  const bool one_tap = a.kh == 1 && a.kw == 1;
  const uint8_t* r = a.r;
  const __m512 vlo = _mm512_set1_ps(prm.vlo), vhi = _mm512_set1_ps(prm.vhi);
  const __m512 rm = _mm512_set1_ps(prm.rm);
  const __m512i yzp = _mm512_set1_epi32(prm.y_zp), rzp = _mm512_set1_epi32(prm.r_zp);
  for (size_t t = 0; t < a.tiles; ++t) {
    __m512i acc[P][NV];
    for (int v = 0; v < NV; ++v) {
      const __m512i b = _mm512_loadu_si512(a.init + v * 16);
#pragma GCC unroll 32
      for (int p = 0; p < P; ++p) acc[p][v] = b;
    }
    const int8_t* wt = w;
    for (size_t cb = 0; cb < a.cb; ++cb) {
      const uint8_t* xc = x + cb * a.x_cbs;
      if (one_tap) {
        quad_steps<NV, P, S>(acc, xc, wt);
        wt += 4 * NV * 64;
        continue;
      }
      for (size_t i = 0; i < a.kh; ++i)
        for (size_t j = 0; j < a.kw; ++j) {
          quad_steps<NV, P, S>(acc, xc + i * a.x_khs + j * a.x_kws, wt);
          wt += 4 * NV * 64;
        }
    }
    // qconv.h steps 3-5: fmaf(acc, m, t), the clamp, round to nearest even, + y_zp.
    for (int v = 0; v < NV; ++v) {
      const __m512 m = _mm512_loadu_ps(a.mult + v * 16);
#pragma GCC unroll 32
      for (int p = 0; p < P; ++p) {
        const size_t at = v * a.y_cbs + p * 16;
        __m512 tr = _mm512_setzero_ps();
        if (r) {
          const __m128i rb = _mm_loadu_si128(reinterpret_cast<const __m128i*>(r + at));
          const __m512i ri = prm.r_signed ? _mm512_cvtepi8_epi32(rb) : _mm512_cvtepu8_epi32(rb);
          tr = _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_sub_epi32(ri, rzp)), rm);
        }
        __m512 f = _mm512_fmadd_ps(_mm512_cvtepi32_ps(acc[p][v]), m, tr);
        f = _mm512_min_ps(_mm512_max_ps(f, vlo), vhi);
        const __m512i q = _mm512_add_epi32(_mm512_cvtps_epi32(f), yzp);
        _mm_storeu_si128(reinterpret_cast<__m128i*>(y + at), _mm512_cvtepi32_epi8(q));
      }
    }
    x += P * S * 16;
    y += P * 16;
    if (r) r += P * 16;
  }
}

// The tiles that fit the registers: P * NV accumulators, NV weight vectors and a broadcast.
struct Tiles {
  template <int NV, int P, int S>
  static constexpr QS8NchwcFn get() {
    if constexpr (P * NV <= 24 && P * NV + NV + 1 <= 32)
      return &tile<NV, P, S>;
    else
      return nullptr;
  }
};

}  // namespace

QS8NchwcFn qs8_nchwc_x16__avx512vnni(int blocks, int pixels, int stride) {
  return select_blocked_tile<QS8NchwcFn, kQS8NchwcMaxPixels, Tiles>(blocks, pixels, stride);
}

}  // namespace dlas::ukernel

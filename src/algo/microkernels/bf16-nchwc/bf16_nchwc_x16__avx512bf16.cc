// AVX512-BF16 blocked direct kernels: nchw16c bf16 activations, one zmm of f32 accumulators
// per output-channel block and pixel, vdpbf16ps per input-channel pair (bf16_nchwc.h).
#include <immintrin.h>

#include <cstring>

#include "algo/microkernels/bf16-nchwc/bf16_nchwc.h"
#include "algo/microkernels/blocked_tile_select.h"

// GCC 12 reports the AVX-512 intrinsics' own "undefined" source operand (__Y = __Y in
// avx512fintrin.h) as uninitialized once they are inlined here; it is never read.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

namespace dlas::ukernel {
namespace {

// The 8 pair steps of one tap, fully unrolled: NV weight vectors, each pixel's pair
// broadcast into them.
template <int NV, int P, int S>
[[gnu::always_inline]] inline void pair_steps(__m512 (&acc)[P][NV], const uint16_t* xt,
                                              const uint16_t* wt) {
#pragma GCC unroll 8
  for (int q = 0; q < 8; ++q) {
    __m512i wv[NV];
    for (int v = 0; v < NV; ++v) wv[v] = _mm512_loadu_si512(wt + (q * NV + v) * 32);
#pragma GCC unroll 32  // whatever P: GCC fully unrolls at most 16 iterations by itself
    for (int p = 0; p < P; ++p) {
      int32_t pair;
      std::memcpy(&pair, xt + p * S * 16 + 2 * q, sizeof pair);
      const __m512i b = _mm512_set1_epi32(pair);
      for (int v = 0; v < NV; ++v)
        acc[p][v] = _mm512_dpbf16_ps(acc[p][v], (__m512bh)b, (__m512bh)wv[v]);
    }
  }
}

template <int NV, int P, int S>
void tile(const Bf16NchwcArgs& a, const uint16_t* x, const uint16_t* w, uint16_t* y) {
  const bool one_tap = a.kh == 1 && a.kw == 1;
  const uint16_t* r = a.r;
  float* yf = a.yf;
  for (size_t t = 0; t < a.tiles; ++t) {
    __m512 acc[P][NV];
    for (int v = 0; v < NV; ++v) {
      const __m512 b = _mm512_loadu_ps(a.bias + v * 16);
#pragma GCC unroll 32
      for (int p = 0; p < P; ++p) acc[p][v] = b;
    }
    const uint16_t* wt = w;
    for (size_t cb = 0; cb < a.cb; ++cb) {
      const uint16_t* xc = x + cb * a.x_cbs;
      if (one_tap) {
        pair_steps<NV, P, S>(acc, xc, wt);
        wt += 8 * NV * 32;
        continue;
      }
      for (size_t i = 0; i < a.kh; ++i)
        for (size_t j = 0; j < a.kw; ++j) {
          pair_steps<NV, P, S>(acc, xc + i * a.x_khs + j * a.x_kws, wt);
          wt += 8 * NV * 32;
        }
    }
    const __m512 lo = _mm512_set1_ps(a.lo), hi = _mm512_set1_ps(a.hi);
    for (int v = 0; v < NV; ++v)
#pragma GCC unroll 32
      for (int p = 0; p < P; ++p) {
        const size_t at = v * a.y_cbs + p * 16;
        __m512 o = acc[p][v];
        if (r) {
          const __m256i h = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(r + at));
          o = _mm512_add_ps(o,
                            _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16)));
        }
        if (yf) {
          _mm512_storeu_ps(yf + v * a.yf_cbs + p * 16, o);
          continue;
        }
        o = _mm512_min_ps(_mm512_max_ps(o, lo), hi);
        const __m256bh n = _mm512_cvtneps_pbh(o);
        std::memcpy(y + at, &n, 32);
      }
    x += P * S * 16;
    y += P * 16;
    if (r) r += P * 16;
    if (yf) yf += P * 16;
  }
}

// The tiles that fit the registers: P * NV accumulators, NV weight vectors and a broadcast.
struct Tiles {
  template <int NV, int P, int S>
  static constexpr Bf16NchwcFn get() {
    if constexpr (P * NV <= 24 && P * NV + NV + 1 <= 32)
      return &tile<NV, P, S>;
    else
      return nullptr;
  }
};

}  // namespace

Bf16NchwcFn bf16_nchwc_x16__avx512bf16(int blocks, int pixels, int stride) {
  return select_blocked_tile<Bf16NchwcFn, kBf16NchwcMaxPixels, Tiles>(blocks, pixels, stride);
}

}  // namespace dlas::ukernel

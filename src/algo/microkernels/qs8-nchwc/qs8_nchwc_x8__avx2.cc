// AVX2 blocked int8 direct kernels: nchw8c u8 activations, read through a copy widened to
// int16 (each pixel's block 8 x s16 = 16 bytes, four channel pairs), one ymm of int32
// accumulators per output-channel block and pixel, vpmaddwd + vpaddd per input-channel pair
// (qs8_nchwc.h). Exact: a pair sums two products of at most 255 * 128. The same tiles
// without the requantizing store (raw int32 sums, stride 1) are the int8 winograd's GEMM.
#include <immintrin.h>

#include <cstring>

#include "algo/microkernels/blocked_tile_select.h"
#include "algo/microkernels/qs8-nchwc/qs8_nchwc.h"
#include "algo/microkernels/qs8-nchwc/qs8_requant8_avx2.h"

namespace dlas::ukernel {
namespace {

// The 4 pair steps of one tap of one input block, fully unrolled: NV weight vectors (8
// lanes x the pair's two s16 weights), each pixel's pair broadcast into them.
template <int NV, int P, int S>
[[gnu::always_inline]] inline void pair_steps(__m256i (&acc)[P][NV], const uint8_t* xt,
                                              const int8_t* wt) {
#pragma GCC unroll 4
  for (int q = 0; q < 4; ++q) {
    __m256i wv[NV];
    for (int v = 0; v < NV; ++v)
      wv[v] = _mm256_load_si256(reinterpret_cast<const __m256i*>(wt + (q * NV + v) * 32));
#pragma GCC unroll 32  // whatever P: GCC fully unrolls at most 16 iterations by itself
    for (int p = 0; p < P; ++p) {
      int32_t pair;
      std::memcpy(&pair, xt + p * S * 16 + 4 * q, sizeof pair);
      const __m256i b = _mm256_set1_epi32(pair);
      for (int v = 0; v < NV; ++v) {
        acc[p][v] = _mm256_add_epi32(acc[p][v], _mm256_madd_epi16(b, wv[v]));
        // Each sum in its accumulator register, in order: integer adds are associative, and
        // GCC would otherwise sum a tap's products as a tree, spilling the registers.
        asm("" : "+x"(acc[p][v]));
      }
    }
  }
}

// The tile's sums: init (per lane of each block, or zero) + every (input block, tap) step.
// One loop over (input block, tap): the accumulators stay in registers across it (GCC
// spilled them at the joins of nested loops and a 1x1 branch).
template <int NV, int P, int S>
[[gnu::always_inline]] inline void accumulate(__m256i (&acc)[P][NV], const QS8NchwcArgs& a,
                                              const uint8_t* x, const int8_t* w) {
  for (int v = 0; v < NV; ++v) {
    const __m256i b = a.init ? _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a.init + v * 8))
                             : _mm256_setzero_si256();
#pragma GCC unroll 32
    for (int p = 0; p < P; ++p) acc[p][v] = b;
  }
  const int8_t* wt = w;
  const uint8_t* xc = x;
  const size_t steps = a.cb * a.kh * a.kw;
  size_t i = 0, j = 0;
  for (size_t st = 0; st < steps; ++st) {
    pair_steps<NV, P, S>(acc, xc + i * a.x_khs + j * a.x_kws, wt);
    wt += 4 * NV * 32;
    if (++j == a.kw) {
      j = 0;
      if (++i == a.kh) i = 0, xc += a.x_cbs;
    }
  }
}

// The sums alone, as int32 (y: blocks a.y_cbs int32 apart, pixels 8 apart).
template <int NV, int P, int S>
void raw_tile(const QS8NchwcArgs& a, const uint8_t* x, const int8_t* w, int32_t* y) {
  for (size_t t = 0; t < a.tiles; ++t) {
    __m256i acc[P][NV];
    accumulate<NV, P, S>(acc, a, x, w);
    for (int v = 0; v < NV; ++v)
#pragma GCC unroll 32
      for (int p = 0; p < P; ++p)
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(y + v * a.y_cbs + p * 8), acc[p][v]);
    x += P * S * 16;
    y += P * 8;
  }
}

template <int NV, int P, int S>
void tile(const QS8NchwcArgs& a, const QS8GemmParams& prm, const uint8_t* x, const int8_t* w,
          uint8_t* y) {
  const uint8_t* r = a.r;
  const Requant8Avx2 rq(prm);
  for (size_t t = 0; t < a.tiles; ++t) {
    __m256i acc[P][NV];
    accumulate<NV, P, S>(acc, a, x, w);
    // qconv.h steps 3-5: fmaf(acc, m, t), the clamp, round to nearest even, + y_zp.
    for (int v = 0; v < NV; ++v) {
      const __m256 m = _mm256_loadu_ps(a.mult + v * 8);
#pragma GCC unroll 32
      for (int p = 0; p < P; ++p) {
        const size_t at = v * a.y_cbs + p * 8;
        rq.store(acc[p][v], m, r ? r + at : nullptr, y + at);
      }
    }
    x += P * S * 16;
    y += P * 8;
    if (r) r += P * 8;
  }
}

// The tiles of the list's row: P * NV accumulators (at most 9), NV weight vectors, a
// broadcast and a product (vpmaddwd has no accumulating form) in the 16 ymm registers.
constexpr bool fits(int nv, int p) { return p * nv <= 9 && p * nv + nv + 1 <= 15; }
struct Tiles {
  template <int NV, int P, int S>
  static constexpr QS8NchwcFn get() {
    if constexpr (fits(NV, P))
      return &tile<NV, P, S>;
    else
      return nullptr;
  }
};
struct RawTiles {
  template <int NV, int P, int S>
  static constexpr QS8NchwcRawFn get() {
    if constexpr (fits(NV, P) && S == 1)
      return &raw_tile<NV, P, S>;
    else
      return nullptr;
  }
};

}  // namespace

QS8NchwcFn qs8_nchwc_x8__avx2(int blocks, int pixels, int stride) {
  return select_blocked_tile<QS8NchwcFn, kQS8NchwcMaxPixels, Tiles>(blocks, pixels, stride);
}

QS8NchwcRawFn qs8_nchwc_x8__avx2_raw(int blocks, int pixels) {
  return select_blocked_tile<QS8NchwcRawFn, kQS8NchwcMaxPixels, RawTiles>(blocks, pixels, 1);
}

}  // namespace dlas::ukernel

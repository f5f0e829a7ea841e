// AVX2 blocked int8 direct kernels: nchw8c u8 activations, read through a copy widened to
// int16 (each pixel's block 8 x s16 = 16 bytes, four channel pairs), one ymm of int32
// accumulators per output-channel block and pixel, vpmaddwd + vpaddd per input-channel pair
// (qs8_nchwc.h). Exact: a pair sums two products of at most 255 * 128.
#include <immintrin.h>

#include <cstring>

#include "algo/microkernels/blocked_tile_select.h"
#include "algo/microkernels/qs8-nchwc/qs8_nchwc.h"

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

// Each int32 lane's low byte, in lane order, to 8 bytes at dst.
inline void store_low_bytes(__m256i v, uint8_t* dst) {
  const __m256i lo = _mm256_shuffle_epi8(
      v, _mm256_setr_epi8(0, 4, 8, 12, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, 0, 4, 8, 12,
                          -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1));
  const __m256i two = _mm256_permutevar8x32_epi32(lo, _mm256_setr_epi32(0, 4, 0, 0, 0, 0, 0, 0));
  _mm_storel_epi64(reinterpret_cast<__m128i*>(dst), _mm256_castsi256_si128(two));
}

template <int NV, int P, int S>
void tile(const QS8NchwcArgs& a, const QS8GemmParams& prm, const uint8_t* x, const int8_t* w,
          uint8_t* y) {
  const uint8_t* r = a.r;
  const __m256 vlo = _mm256_set1_ps(prm.vlo), vhi = _mm256_set1_ps(prm.vhi);
  const __m256 rm = _mm256_set1_ps(prm.rm);
  const __m256i yzp = _mm256_set1_epi32(prm.y_zp), rzp = _mm256_set1_epi32(prm.r_zp);
  for (size_t t = 0; t < a.tiles; ++t) {
    __m256i acc[P][NV];
    for (int v = 0; v < NV; ++v) {
      const __m256i b = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a.init + v * 8));
      for (int p = 0; p < P; ++p) acc[p][v] = b;
    }
    // One loop over (input block, tap): the accumulators stay in registers across it (GCC
    // spilled them at the joins of nested loops and a 1x1 branch).
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
    // qconv.h steps 3-5: fmaf(acc, m, t), the clamp, round to nearest even, + y_zp.
    for (int v = 0; v < NV; ++v) {
      const __m256 m = _mm256_loadu_ps(a.mult + v * 8);
      for (int p = 0; p < P; ++p) {
        const size_t at = v * a.y_cbs + p * 8;
        __m256 tr = _mm256_setzero_ps();
        if (r) {
          const __m128i rb = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(r + at));
          const __m256i ri = prm.r_signed ? _mm256_cvtepi8_epi32(rb) : _mm256_cvtepu8_epi32(rb);
          tr = _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_sub_epi32(ri, rzp)), rm);
        }
        __m256 f = _mm256_fmadd_ps(_mm256_cvtepi32_ps(acc[p][v]), m, tr);
        f = _mm256_min_ps(_mm256_max_ps(f, vlo), vhi);
        store_low_bytes(_mm256_add_epi32(_mm256_cvtps_epi32(f), yzp), y + at);
      }
    }
    x += P * S * 16;
    y += P * 8;
    if (r) r += P * 8;
  }
}

// The tiles of the list's row: P * NV accumulators (at most 9), NV weight vectors, a
// broadcast and a product (vpmaddwd has no accumulating form) in the 16 ymm registers.
struct Tiles {
  template <int NV, int P, int S>
  static constexpr QS8NchwcFn get() {
    if constexpr (P * NV <= 9 && P * NV + NV + 1 <= 15)
      return &tile<NV, P, S>;
    else
      return nullptr;
  }
};

}  // namespace

QS8NchwcFn qs8_nchwc_x8__avx2(int blocks, int pixels, int stride) {
  return select_blocked_tile<QS8NchwcFn, kQS8NchwcMaxPixels, Tiles>(blocks, pixels, stride);
}

}  // namespace dlas::ukernel

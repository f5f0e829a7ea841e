// AVX512-VNNI int8 depthwise on 8-bit blocks: quad rows staged by a dword permute and a byte
// shuffle, one vpdpbusd per (pixel, kernel row, quad of taps) (qs8_dwquad.h).
#include <immintrin.h>

#include <cstring>

#include "algo/microkernels/qs8-dwquad/qs8_dwquad.h"

// GCC 12 reports the AVX-512 intrinsics' own "undefined" source operand (__Y = __Y in
// avx512fintrin.h) as uninitialized once they are inlined here; it is never read.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

namespace dlas::ukernel {
namespace {

constexpr int kTile = 8;  // output pixels per register tile

// 64 bytes of 4 pixel blocks ([p][16 channels]) -> 16 dwords of the 4 pixels' bytes per
// channel: dword (p, g) to lane g slot p, then the 4 x 4 bytes of each lane transposed.
inline __m512i to_quads(__m512i v, __m512i perm, __m512i shuf) {
  return _mm512_shuffle_epi8(_mm512_permutexvar_epi32(perm, v), shuf);
}

// Stages the quad rows of input rows iy0 .. iy0 + nrows - 1 into Q.
void stage(const QS8DwQuadConfig& c, const QS8DwQuadTask& t, int64_t iy0, int64_t nrows,
           uint8_t* Q) {
  const __m512i perm = _mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15);
  const __m512i shuf =
      _mm512_broadcast_i32x4(_mm_setr_epi8(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15));
  const __m512i zp = _mm512_set1_epi8(static_cast<char>(c.x_zp));
  for (int64_t r = 0; r < nrows; ++r) {
    uint8_t* q = Q + r * c.cols * 64;
    const int64_t iy = iy0 + r;
    if (iy < 0 || iy >= c.h) {
      for (int64_t pc = 0; pc < c.cols; ++pc) _mm512_store_si512(q + pc * 64, zp);
      continue;
    }
    const uint8_t* row = t.x + iy * c.w * 16;
    for (int64_t pc = 0; pc < c.cols; ++pc) {
      const int64_t ix = pc * c.sw - c.pad_l;  // input column of the quad's first pixel
      __m512i v;
      if (ix >= 0 && ix + 4 <= c.w) {
        v = _mm512_loadu_si512(row + ix * 16);
      } else {  // pixels outside the row hold x_zp: a masked load over zp
        __mmask64 m = 0;
        for (int p = 0; p < 4; ++p)
          if (ix + p >= 0 && ix + p < c.w) m |= 0xFFFFull << (16 * p);
        v = _mm512_mask_loadu_epi8(zp, m, row + ix * 16);
      }
      _mm512_store_si512(q + pc * 64, to_quads(v, perm, shuf));
    }
  }
}

template <int KQ>  // kernel rows x quads when fixed at compile time (3x3: 3), else 0
void band(const QS8DwQuadConfig& c, const QS8DwQuadTask& t, const QS8GemmParams& prm) {
  const int64_t iy0 = t.oy0 * c.sh - c.pad_t;
  const int64_t nrows = (t.oy1 - t.oy0 - 1) * c.sh + c.kh;
  uint8_t* Q = t.buf;
  stage(c, t, iy0, nrows, Q);
  const int kq = KQ ? KQ : c.kh * c.nq;
  __m512i wv[KQ ? KQ : 64];
  int64_t woff[KQ ? KQ : 64];  // byte offset of weight j's quads from the tile's row start
  for (int j = 0; j < kq; ++j) {
    wv[j] = _mm512_loadu_si512(t.w + j * 16);
    woff[j] = ((j / c.nq) * c.cols + (j % c.nq) * 4 / c.sw) * 64;
  }
  const __m512i bias = _mm512_loadu_si512(t.bias);
  const __m512 m = _mm512_loadu_ps(t.m);
  const __m512 vlo = _mm512_set1_ps(prm.vlo), vhi = _mm512_set1_ps(prm.vhi);
  const __m512 rm = _mm512_set1_ps(prm.rm);
  const __m512i yzp = _mm512_set1_epi32(prm.y_zp), rzp = _mm512_set1_epi32(prm.r_zp);
  constexpr int64_t sw64 = 64;  // the next output pixel's quads: the next staged column
  for (int64_t oy = t.oy0; oy < t.oy1; ++oy) {
    const uint8_t* qrow = Q + (oy - t.oy0) * c.sh * c.cols * 64;
    for (int64_t ox0 = 0; ox0 < c.ow; ox0 += kTile) {
      const int n = c.ow - ox0 < kTile ? static_cast<int>(c.ow - ox0) : kTile;
      __m512i acc[kTile];
      for (int p = 0; p < kTile; ++p) acc[p] = bias;
      const uint8_t* q0 = qrow + ox0 * sw64;
      if (n == kTile) {
        for (int j = 0; j < kq; ++j)
          for (int p = 0; p < kTile; ++p)
            acc[p] = _mm512_dpbusd_epi32(acc[p], _mm512_load_si512(q0 + woff[j] + p * sw64), wv[j]);
      } else {
        for (int j = 0; j < kq; ++j)
          for (int p = 0; p < n; ++p)
            acc[p] = _mm512_dpbusd_epi32(acc[p], _mm512_load_si512(q0 + woff[j] + p * sw64), wv[j]);
      }
      const int64_t at = (oy * c.ow + ox0) * 16;
      for (int p = 0; p < n; ++p) {
        __m512 tr = _mm512_setzero_ps();
        if (t.residual) {
          const __m128i rb =
              _mm_loadu_si128(reinterpret_cast<const __m128i*>(t.residual + at + p * 16));
          const __m512i ri = prm.r_signed ? _mm512_cvtepi8_epi32(rb) : _mm512_cvtepu8_epi32(rb);
          tr = _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_sub_epi32(ri, rzp)), rm);
        }
        __m512 f = _mm512_fmadd_ps(_mm512_cvtepi32_ps(acc[p]), m, tr);
        f = _mm512_min_ps(_mm512_max_ps(f, vlo), vhi);
        const __m512i qv = _mm512_add_epi32(_mm512_cvtps_epi32(f), yzp);
        _mm_storeu_si128(reinterpret_cast<__m128i*>(t.y + at + p * 16), _mm512_cvtepi32_epi8(qv));
      }
    }
  }
}

}  // namespace

void qs8_dwquad_16lane__avx512vnni(const QS8DwQuadConfig& c, const QS8DwQuadTask& t,
                                   const QS8GemmParams& p) {
  if (c.kh * c.nq == 3)
    band<3>(c, t, p);
  else if (c.kh * c.nq == 10)
    band<10>(c, t, p);
  else
    band<0>(c, t, p);
}

}  // namespace dlas::ukernel

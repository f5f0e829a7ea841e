// Byte table lookup on AVX2 (and on AVX-512 CPUs without VBMI): 32 bytes per step, the
// 256-byte table as 16 rows of 16 bytes, each row applied with one vpshufb (which reads an
// index's low 4 bits and gives 0 where its top bit is set).
//   - Low half (x < 128): v = x, lowered by 16 per row with signed saturation, so it stays
//     non-negative exactly for the rows r <= x / 16 and an x >= 128 (negative) never selects.
//     The rows are stored XOR-differenced (D[r] = T[r] ^ T[r - 1], D[0] = T[0]), so the XOR of
//     rows 0 .. x / 16 is T[x / 16].
//   - High half: the same on x ^ 0x80 with rows 8 .. 15.
// 16 vpshufb, 14 vpsubsb and 16 vpxor per 32 bytes, against one load and one store per byte
// for the scalar loop.
#include <immintrin.h>

#include "algo/microkernels/u8-lut/u8_lut.h"

namespace dlas::ukernel {

void u8_lut__avx2_bytes(size_t n, const uint8_t* x, const uint8_t* table, uint8_t* y) {
  __m256i d[16];
  for (int r = 0; r < 16; ++r) {
    __m128i row = _mm_loadu_si128(reinterpret_cast<const __m128i*>(table + 16 * r));
    if (r % 8 != 0)
      row = _mm_xor_si128(row,
                          _mm_loadu_si128(reinterpret_cast<const __m128i*>(table + 16 * r - 16)));
    d[r] = _mm256_broadcastsi128_si256(row);
  }
  const __m256i step = _mm256_set1_epi8(16), flip = _mm256_set1_epi8(static_cast<char>(0x80));
  auto half = [&](__m256i v, const __m256i* rows) {
    __m256i acc = _mm256_shuffle_epi8(rows[0], v);
#pragma GCC unroll 7
    for (int r = 1; r < 8; ++r) {
      v = _mm256_subs_epi8(v, step);
      acc = _mm256_xor_si256(acc, _mm256_shuffle_epi8(rows[r], v));
    }
    return acc;
  };
  auto lookup = [&](__m256i v) {
    return _mm256_xor_si256(half(v, d), half(_mm256_xor_si256(v, flip), d + 8));
  };
  size_t i = 0;
  for (; i + 32 <= n; i += 32)
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(y + i),
                        lookup(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(x + i))));
  if (i < n) {
    alignas(32) uint8_t buf[32] = {};
    __builtin_memcpy(buf, x + i, n - i);
    _mm256_store_si256(reinterpret_cast<__m256i*>(buf),
                       lookup(_mm256_load_si256(reinterpret_cast<const __m256i*>(buf))));
    __builtin_memcpy(y + i, buf, n - i);
  }
}

}  // namespace dlas::ukernel

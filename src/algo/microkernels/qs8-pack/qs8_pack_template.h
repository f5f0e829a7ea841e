// The int8 packing kernels (qs8_pack.h) written once over 16-byte GCC vectors; each ISA TU
// instantiates them (the shuffles compile to pshufb / punpck where the TU's flags allow).
// Whole body in an anonymous namespace: internal linkage per TU.
#pragma once

#include <cstddef>
#include <cstdint>

namespace {

typedef uint8_t QPackV __attribute__((vector_size(16)));

inline void qs8_pack_quads(const uint8_t* const* r, size_t n, uint8_t flip, uint8_t* dst) {
  const QPackV f = QPackV{} + flip;
  size_t j = 0;
  for (; j + 16 <= n; j += 16) {
    QPackV a, b, c, d;
    __builtin_memcpy(&a, r[0] + j, 16), __builtin_memcpy(&b, r[1] + j, 16);
    __builtin_memcpy(&c, r[2] + j, 16), __builtin_memcpy(&d, r[3] + j, 16);
    a ^= f, b ^= f, c ^= f, d ^= f;
    // Two rounds of unpacks: bytes of (a, b) and (c, d), then their 16-bit pairs.
    const QPackV lo8 = QPackV{0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23};
    const QPackV hi8 = QPackV{8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15, 31};
    const QPackV ab_lo = __builtin_shuffle(a, b, lo8), ab_hi = __builtin_shuffle(a, b, hi8);
    const QPackV cd_lo = __builtin_shuffle(c, d, lo8), cd_hi = __builtin_shuffle(c, d, hi8);
    const QPackV lo16 = QPackV{0, 1, 16, 17, 2, 3, 18, 19, 4, 5, 20, 21, 6, 7, 22, 23};
    const QPackV hi16 = QPackV{8, 9, 24, 25, 10, 11, 26, 27, 12, 13, 28, 29, 14, 15, 30, 31};
    const QPackV o0 = __builtin_shuffle(ab_lo, cd_lo, lo16);
    const QPackV o1 = __builtin_shuffle(ab_lo, cd_lo, hi16);
    const QPackV o2 = __builtin_shuffle(ab_hi, cd_hi, lo16);
    const QPackV o3 = __builtin_shuffle(ab_hi, cd_hi, hi16);
    __builtin_memcpy(dst + j * 4, &o0, 16), __builtin_memcpy(dst + j * 4 + 16, &o1, 16);
    __builtin_memcpy(dst + j * 4 + 32, &o2, 16), __builtin_memcpy(dst + j * 4 + 48, &o3, 16);
  }
  for (; j < n; ++j)
    for (int e = 0; e < 4; ++e) dst[j * 4 + e] = r[e][j] ^ flip;
}

inline void qs8_pack_pairs(const uint8_t* const* r, size_t n, uint8_t flip, uint8_t* dst) {
  const QPackV f = QPackV{} + flip, z = QPackV{};
  size_t j = 0;
  for (; j + 16 <= n; j += 16) {
    QPackV a, b;
    __builtin_memcpy(&a, r[0] + j, 16), __builtin_memcpy(&b, r[1] + j, 16);
    a ^= f, b ^= f;
    // a0 0 b0 0 a1 0 b1 0 ...: bytes of a and b zero-extended to 16 bits, interleaved.
    const QPackV az_lo =
        __builtin_shuffle(a, z, QPackV{0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23});
    const QPackV az_hi = __builtin_shuffle(
        a, z, QPackV{8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15, 31});
    const QPackV bz_lo =
        __builtin_shuffle(b, z, QPackV{0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23});
    const QPackV bz_hi = __builtin_shuffle(
        b, z, QPackV{8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15, 31});
    const QPackV lo16 = QPackV{0, 1, 16, 17, 2, 3, 18, 19, 4, 5, 20, 21, 6, 7, 22, 23};
    const QPackV hi16 = QPackV{8, 9, 24, 25, 10, 11, 26, 27, 12, 13, 28, 29, 14, 15, 30, 31};
    const QPackV o0 = __builtin_shuffle(az_lo, bz_lo, lo16);
    const QPackV o1 = __builtin_shuffle(az_lo, bz_lo, hi16);
    const QPackV o2 = __builtin_shuffle(az_hi, bz_hi, lo16);
    const QPackV o3 = __builtin_shuffle(az_hi, bz_hi, hi16);
    __builtin_memcpy(dst + j * 4, &o0, 16), __builtin_memcpy(dst + j * 4 + 16, &o1, 16);
    __builtin_memcpy(dst + j * 4 + 32, &o2, 16), __builtin_memcpy(dst + j * 4 + 48, &o3, 16);
  }
  for (; j < n; ++j) {
    dst[j * 4] = r[0][j] ^ flip, dst[j * 4 + 1] = 0;
    dst[j * 4 + 2] = r[1][j] ^ flip, dst[j * 4 + 3] = 0;
  }
}

inline void qs8_pack_copy(const uint8_t* src, size_t stride, size_t n, uint8_t flip, uint8_t* dst) {
  size_t j = 0;
  if (stride == 1) {
    const QPackV f = QPackV{} + flip;
    for (; j + 16 <= n; j += 16) {
      QPackV a;
      __builtin_memcpy(&a, src + j, 16);
      a ^= f;
      __builtin_memcpy(dst + j, &a, 16);
    }
  } else if (stride == 2) {
    // Even bytes of 32: one shuffle of two vectors.
    const QPackV f = QPackV{} + flip;
    for (; j + 16 <= n && 2 * j + 32 <= 2 * n; j += 16) {
      QPackV a, b;
      __builtin_memcpy(&a, src + 2 * j, 16), __builtin_memcpy(&b, src + 2 * j + 16, 16);
      QPackV o = __builtin_shuffle(
          a, b, QPackV{0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30});
      o ^= f;
      __builtin_memcpy(dst + j, &o, 16);
    }
  }
  for (; j < n; ++j) dst[j] = src[j * stride] ^ flip;
}

}  // namespace

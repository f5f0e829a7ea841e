// The int8 dot-product policy of the *__avx2.cc TUs of qs8-gemm, qs8-spack and qs8-dwconv
// (included only by them: it uses that ISA's intrinsics; anonymous namespace).
#pragma once

#include <immintrin.h>

#include "algo/microkernels/qs8-gemm/qs8_gemm_template.h"

namespace {

// Rounding and byte moves of 8 int32 lanes (qs8_load_bytes / qs8_store_low_bytes): vpmovzxbd /
// vpmovsxbd from 8 bytes, and vpshufb (each 128-bit half's low bytes to its first dword)
// + vpermd (the two dwords together) to 8 bytes.
struct QS8Avx2Bytes {
  typedef QVec<8>::i32 I;
  typedef QVec<8>::f32 F;
  // vcvtps2dq: nearest, ties to even (the default rounding mode, as the magic number).
  static I round(F f) { return (I)_mm256_cvtps_epi32((__m256)f); }
  static I load_u8(const void* p) {
    return (I)_mm256_cvtepu8_epi32(_mm_loadl_epi64(static_cast<const __m128i*>(p)));
  }
  static I load_s8(const void* p) {
    return (I)_mm256_cvtepi8_epi32(_mm_loadl_epi64(static_cast<const __m128i*>(p)));
  }
  static void store_low_bytes(I v, void* p) {
    const __m256i lo = _mm256_shuffle_epi8(
        (__m256i)v, _mm256_setr_epi8(0, 4, 8, 12, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, 0,
                                     4, 8, 12, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1));
    const __m256i two = _mm256_permutevar8x32_epi32(lo, _mm256_setr_epi32(0, 4, 0, 0, 0, 0, 0, 0));
    _mm_storel_epi64(static_cast<__m128i*>(p), _mm256_castsi256_si128(two));
  }
};

// s16 pairs: vpmaddwd sums two products of at most 255 * 128 into an int32 lane (exact;
// pmaddubsw would saturate). 8 lanes = 8 pixels (or output channels) per ymm.
struct QS8Avx2Pairs : QS8Avx2Bytes {
  static constexpr int kLanes = 8;
  typedef QVec<8>::i32 I;
  typedef QVec<8>::f32 F;
  static I dot(I acc, I b, I a) { return acc + (I)_mm256_madd_epi16((__m256i)b, (__m256i)a); }
  static F fma(F a, F b, F c) { return (F)_mm256_fmadd_ps((__m256)a, (__m256)b, (__m256)c); }
};

}  // namespace

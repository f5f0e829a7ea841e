// The int8 dot-product policy of the *__avx512.cc TUs of qs8-gemm, qs8-spack and qs8-dwconv
// (included only by them: it uses that ISA's intrinsics; anonymous namespace).
#pragma once

#include <immintrin.h>

#include "algo/microkernels/qs8-gemm/qs8_gemm_template.h"

namespace {

// Rounding and byte moves of 16 int32 lanes (qs8_load_bytes / qs8_store_low_bytes): vpmovzxbd /
// vpmovsxbd from 16 bytes, vpmovdb (truncating) to 16 bytes.
struct QS8Avx512Bytes {
  typedef QVec<16>::i32 I;
  typedef QVec<16>::f32 F;
  // vcvtps2dq: nearest, ties to even (the default rounding mode, as the magic number).
  static I round(F f) { return (I)_mm512_cvtps_epi32((__m512)f); }
  static I load_u8(const void* p) {
    return (I)_mm512_cvtepu8_epi32(_mm_loadu_si128(static_cast<const __m128i*>(p)));
  }
  static I load_s8(const void* p) {
    return (I)_mm512_cvtepi8_epi32(_mm_loadu_si128(static_cast<const __m128i*>(p)));
  }
  static void store_low_bytes(I v, void* p) {
    _mm_storeu_si128(static_cast<__m128i*>(p), _mm512_cvtepi32_epi8((__m512i)v));
  }
};

// s16 pairs through vpmaddwd (exact, see qs8_gemm.h); 16 lanes per zmm.
struct QS8Avx512Pairs : QS8Avx512Bytes {
  static constexpr int kLanes = 16;
  typedef QVec<16>::i32 I;
  typedef QVec<16>::f32 F;
  static I dot(I acc, I b, I a) { return acc + (I)_mm512_madd_epi16((__m512i)b, (__m512i)a); }
  static F fma(F a, F b, F c) { return (F)_mm512_fmadd_ps((__m512)a, (__m512)b, (__m512)c); }
};

}  // namespace

// The requantizing store of 8 int32 lanes (one 8-channel block of one pixel) that the AVX2
// blocked int8 kernels share (qs8-nchwc's tiles, qs8-wino's output transform): qconv.h
// steps 3-5 lane for lane -- fmaf(acc, mult, residual term), the clamp, round to nearest
// even, + y_zp -- and each lane's low byte to 8 bytes. Included only by *__avx2.cc TUs (it
// uses that ISA's intrinsics); anonymous namespace.
#pragma once

#include <immintrin.h>

#include <cstdint>

#include "algo/microkernels/qs8-gemm/qs8_gemm_avx2_policy.h"

namespace {

struct Requant8Avx2 {
  __m256 vlo, vhi, rm;
  __m256i yzp, rzp;
  bool r_signed;

  explicit Requant8Avx2(const dlas::ukernel::QS8GemmParams& p)
      : vlo(_mm256_set1_ps(p.vlo)),
        vhi(_mm256_set1_ps(p.vhi)),
        rm(_mm256_set1_ps(p.rm)),
        yzp(_mm256_set1_epi32(p.y_zp)),
        rzp(_mm256_set1_epi32(p.r_zp)),
        r_signed(p.r_signed) {}

  // acc's 8 lanes times m, plus the residual's 8 bytes at r (or none), to 8 bytes at y.
  [[gnu::always_inline]] inline void store(__m256i acc, __m256 m, const uint8_t* r,
                                           uint8_t* y) const {
    __m256 tr = _mm256_setzero_ps();
    if (r) {
      const __m128i rb = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(r));
      const __m256i ri = r_signed ? _mm256_cvtepi8_epi32(rb) : _mm256_cvtepu8_epi32(rb);
      tr = _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_sub_epi32(ri, rzp)), rm);
    }
    __m256 f = _mm256_fmadd_ps(_mm256_cvtepi32_ps(acc), m, tr);
    f = _mm256_min_ps(_mm256_max_ps(f, vlo), vhi);
    QS8Avx2Bytes::store_low_bytes((QS8Avx2Bytes::I)_mm256_add_epi32(_mm256_cvtps_epi32(f), yzp), y);
  }
};

}  // namespace

// The AVX512-BF16 pair-dot policy of bf16_gemm_template.h (included only by *__avx512bf16.cc
// TUs; anonymous namespace).
#pragma once

#include <immintrin.h>

#include <cstdint>

namespace {

struct Bf16Avx512Bf16 {
  static constexpr int kLanes = 16;
  typedef float V __attribute__((vector_size(64)));
  typedef uint32_t PV __attribute__((vector_size(64)));
  static V dot(V acc, PV a, PV b) {
    return (V)_mm512_dpbf16_ps((__m512)acc, (__m512bh)a, (__m512bh)b);
  }
};

}  // namespace

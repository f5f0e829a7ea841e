// The f32 layer normalization of f32_vlayernorm.h written once over a GCC vector type;
// f32_vlayernorm__<isa>.cc instantiate it with their lane count. Three passes over a row
// (sum, squared deviations, the affine), each with two accumulators; a row of ConvNeXt's 96
// to 768 channels stays in L1 between them. Anonymous namespace: internal linkage per TU.
#pragma once

#include <cmath>
#include <cstddef>

#include "algo/microkernels/f32-vepilogue/f32_vepilogue_template.h"

namespace {

template <int L>
inline float f32vec_sum(typename F32Vec<L>::type v) {
  float s = 0.f;
  for (int j = 0; j < L; ++j) s += v[j];
  return s;
}

template <int L>
inline void f32_vlayernorm_vec(size_t rows, size_t c, const float* x, const float* gamma,
                               const float* beta, float eps, float* y) {
  typedef typename F32Vec<L>::type V;
  const V zero = f32vec_splat<L>(0.f);
  for (size_t r = 0; r < rows; ++r) {
    const float* xr = x + r * c;
    float* yr = y + r * c;
    V a0 = zero, a1 = zero;
    size_t i = 0;
    for (; i + 2 * L <= c; i += 2 * L) {
      a0 += f32vec_load<L>(xr + i);
      a1 += f32vec_load<L>(xr + i + L);
    }
    for (; i + L <= c; i += L) a0 += f32vec_load<L>(xr + i);
    float sum = f32vec_sum<L>(a0 + a1);
    for (; i < c; ++i) sum += xr[i];
    const float mean = sum / static_cast<float>(c);
    const V vm = f32vec_splat<L>(mean);
    V q0 = zero, q1 = zero;
    for (i = 0; i + 2 * L <= c; i += 2 * L) {
      const V d0 = f32vec_load<L>(xr + i) - vm, d1 = f32vec_load<L>(xr + i + L) - vm;
      q0 += d0 * d0;
      q1 += d1 * d1;
    }
    for (; i + L <= c; i += L) {
      const V d = f32vec_load<L>(xr + i) - vm;
      q0 += d * d;
    }
    float sq = f32vec_sum<L>(q0 + q1);
    for (; i < c; ++i) sq += (xr[i] - mean) * (xr[i] - mean);
    const float inv = 1.f / std::sqrt(sq / static_cast<float>(c) + eps);
    const V vi = f32vec_splat<L>(inv);
    for (i = 0; i + L <= c; i += L)
      f32vec_store<L>(yr + i, (f32vec_load<L>(xr + i) - vm) * vi * f32vec_load<L>(gamma + i) +
                                  f32vec_load<L>(beta + i));
    for (; i < c; ++i) yr[i] = (xr[i] - mean) * inv * gamma[i] + beta[i];
  }
}

}  // namespace

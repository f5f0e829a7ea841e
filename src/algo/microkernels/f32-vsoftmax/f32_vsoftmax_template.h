// The f32 softmax of f32_vsoftmax.h written once over a GCC vector type; f32_vsoftmax__<isa>.cc
// instantiate it with their lane count. Three passes over a row in L1 (the maximum; the
// exponentials, stored and summed; the scaling), the exponential the vector epilogue's
// (x - max <= 0). The tail runs as one full vector through a stack buffer padded with -inf,
// whose exponentials are 0. Anonymous namespace: internal linkage per TU.
#pragma once

#include <cstddef>

#include "algo/microkernels/f32-vepilogue/f32_vepilogue_template.h"

namespace {

template <int L>
inline void f32_vsoftmax_vec(size_t rows, size_t c, const float* x, float* y) {
  typedef typename F32Vec<L>::type V;
  const float ninf = -__builtin_inff();
  const size_t body = c / L * L, tail = c - body;
  for (size_t r = 0; r < rows; ++r) {
    const float* xr = x + r * c;
    float* yr = y + r * c;
    float buf[L];
    for (int j = 0; j < L; ++j) buf[j] = static_cast<size_t>(j) < tail ? xr[body + j] : ninf;
    V m0 = f32vec_load<L>(buf), m1 = m0;
    size_t i = 0;
    for (; i + 2 * L <= body; i += 2 * L) {
      const V a = f32vec_load<L>(xr + i), b = f32vec_load<L>(xr + i + L);
      m0 = a > m0 ? a : m0;
      m1 = b > m1 ? b : m1;
    }
    for (; i < body; i += L) {
      const V a = f32vec_load<L>(xr + i);
      m0 = a > m0 ? a : m0;
    }
    m0 = m1 > m0 ? m1 : m0;
    float mx = m0[0];
    for (int j = 1; j < L; ++j) mx = m0[j] > mx ? m0[j] : mx;
    const V vm = f32vec_splat<L>(mx);
    V s0 = f32vec_splat<L>(0.f), s1 = s0;
    for (i = 0; i + 2 * L <= body; i += 2 * L) {
      const V e0 = f32vec_exp_nonpositive<L>(f32vec_load<L>(xr + i) - vm);
      const V e1 = f32vec_exp_nonpositive<L>(f32vec_load<L>(xr + i + L) - vm);
      f32vec_store<L>(yr + i, e0);
      f32vec_store<L>(yr + i + L, e1);
      s0 += e0;
      s1 += e1;
    }
    for (; i < body; i += L) {
      const V e = f32vec_exp_nonpositive<L>(f32vec_load<L>(xr + i) - vm);
      f32vec_store<L>(yr + i, e);
      s0 += e;
    }
    if (tail) {
      const V e = f32vec_exp_nonpositive<L>(f32vec_load<L>(buf) - vm);
      f32vec_store<L>(buf, e);
      s1 += e;
      for (size_t j = 0; j < tail; ++j) yr[body + j] = buf[j];
    }
    s0 += s1;
    float sum = 0.f;
    for (int j = 0; j < L; ++j) sum += s0[j];
    const V inv = f32vec_splat<L>(1.f / sum);
    for (i = 0; i < body; i += L) f32vec_store<L>(yr + i, f32vec_load<L>(yr + i) * inv);
    for (size_t j = body; j < c; ++j) yr[j] *= inv[0];
  }
}

}  // namespace

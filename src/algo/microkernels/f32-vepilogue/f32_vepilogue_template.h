// The f32 epilogue y = act(y + bias + residual) written once over a GCC vector
// type; f32_vepilogue__<isa>.cc instantiate it with their lane count. Anonymous
// namespace: internal linkage per TU (see f32_gemm_template.h). The tail (n % L) is
// processed as one full vector through a stack buffer, so it runs the same code.
#pragma once

#include <cstddef>
#include <cstdint>

#include "algo/microkernels/f32-gemm/f32_gemm_template.h"
#include "dlas/algo/conv.h"

namespace {

template <int L>
struct I32Vec;
template <>
struct I32Vec<8> {
  typedef int32_t type __attribute__((vector_size(32)));
};
template <>
struct I32Vec<16> {
  typedef int32_t type __attribute__((vector_size(64)));
};

// exp(x) for x <= 0 (the only range sigmoid needs; see below). Cody-Waite reduction
// x = n ln2 + r, |r| <= ln2/2, then the degree-7 Taylor polynomial (truncation error
// |r|^8/8! < 6e-9 relative, well below 1/2 ulp), scaled by 2^n. n comes from the
// 1.5 * 2^23 rounding trick with 151 added to the magic number: the sum's low mantissa bits
// are then n + 151, the exponent field of 2^(n + 24), so one shift makes the scale, and a
// final * 2^-24 rounds results below FLT_MIN correctly into the subnormals (x is clamped at
// -103.97, n >= -150, where exp(x) rounds to 0 anyway).
template <int L>
inline typename F32Vec<L>::type f32vec_exp_nonpositive(typename F32Vec<L>::type x) {
  typedef typename F32Vec<L>::type V;
  typedef typename I32Vec<L>::type VI;
  const V lo = f32vec_splat<L>(-103.97f);
  x = x < lo ? lo : x;
  const V magic = f32vec_splat<L>(12582912.f + 151.f);
  const V t = x * f32vec_splat<L>(1.44269504088896341f) + magic;
  const V n = t - magic;
  V r = x - n * f32vec_splat<L>(0.693359375f);   // ln2 high part: exact product
  r = r - n * f32vec_splat<L>(-2.12194440e-4f);  // ln2 low part
  V p = f32vec_splat<L>(1.f / 5040.f);
  p = p * r + f32vec_splat<L>(1.f / 720.f);
  p = p * r + f32vec_splat<L>(1.f / 120.f);
  p = p * r + f32vec_splat<L>(1.f / 24.f);
  p = p * r + f32vec_splat<L>(1.f / 6.f);
  p = p * r + f32vec_splat<L>(0.5f);
  p = p * r + f32vec_splat<L>(1.f);
  p = p * r + f32vec_splat<L>(1.f);
  const VI scale = (VI)t << 23;  // GCC vector casts reinterpret the bits
  return (p * (V)scale) * f32vec_splat<L>(5.9604644775390625e-8f);  // 2^-24
}

// sigmoid(x) without overflow: with e = exp(-|x|) in (0, 1],
// sigmoid(|x|) = 1 / (1 + e) and sigmoid(-|x|) = e / (1 + e).
template <int L>
inline typename F32Vec<L>::type f32vec_sigmoid(typename F32Vec<L>::type x) {
  typedef typename F32Vec<L>::type V;
  typedef typename I32Vec<L>::type VI;
  const V zero = f32vec_splat<L>(0.f);
  const V neg_abs = (V)((VI)x | (VI)f32vec_splat<L>(-0.f));
  const V e = f32vec_exp_nonpositive<L>(neg_abs);
  const V d = f32vec_splat<L>(1.f) + e;
  return (x > zero ? f32vec_splat<L>(1.f) : e) / d;
}

// erfc(a) for a >= 0 by Abramowitz & Stegun 7.1.26: t (a1 + t (a2 + ... a5)) exp(-a^2) with
// t = 1 / (1 + p a); absolute error under 1.5e-7.
template <int L>
inline typename F32Vec<L>::type f32vec_erfc_as(typename F32Vec<L>::type a) {
  typedef typename F32Vec<L>::type V;
  const V t = f32vec_splat<L>(1.f) / (f32vec_splat<L>(1.f) + f32vec_splat<L>(0.3275911f) * a);
  V p = f32vec_splat<L>(1.061405429f);
  p = p * t + f32vec_splat<L>(-1.453152027f);
  p = p * t + f32vec_splat<L>(1.421413741f);
  p = p * t + f32vec_splat<L>(-0.284496736f);
  p = p * t + f32vec_splat<L>(0.254829592f);
  return p * t * f32vec_exp_nonpositive<L>(-(a * a));
}

// erf(x). Below |x| = 1 its odd Taylor series to x^19 (truncation under 2e-8); above,
// Abramowitz & Stegun 7.1.26 on |x|, 1 - t (a1 + t (a2 + ... a5)) exp(-x^2) with
// t = 1 / (1 + p |x|), absolute error under 1.5e-7 where erf >= 0.84; the sign restored, |x|
// capped at 10, where erf rounds to +-1.
template <int L>
inline typename F32Vec<L>::type f32vec_erf(typename F32Vec<L>::type x) {
  typedef typename F32Vec<L>::type V;
  typedef typename I32Vec<L>::type VI;
  const VI sign = (VI)x & (VI)f32vec_splat<L>(-0.f);
  V a = (V)((VI)x & ~(VI)f32vec_splat<L>(-0.f));
  a = a > f32vec_splat<L>(10.f) ? f32vec_splat<L>(10.f) : a;
  const V far = f32vec_splat<L>(1.f) - f32vec_erfc_as<L>(a);
  // 2/sqrt(pi) * sum_n (-1)^n x^(2n+1) / (n! (2n+1)), n = 0..9
  const V x2 = a * a;
  V q = f32vec_splat<L>(-1.450385222e-07f);
  q = q * x2 + f32vec_splat<L>(1.458916900e-06f);
  q = q * x2 + f32vec_splat<L>(-1.322751323e-05f);
  q = q * x2 + f32vec_splat<L>(1.068376068e-04f);
  q = q * x2 + f32vec_splat<L>(-7.575757576e-04f);
  q = q * x2 + f32vec_splat<L>(4.629629630e-03f);
  q = q * x2 + f32vec_splat<L>(-2.380952381e-02f);
  q = q * x2 + f32vec_splat<L>(1.000000000e-01f);
  q = q * x2 + f32vec_splat<L>(-3.333333333e-01f);
  q = q * x2 + f32vec_splat<L>(1.000000000e+00f);
  const V near = q * a * f32vec_splat<L>(1.12837916709551257f);
  const V y = a < f32vec_splat<L>(1.f) ? near : far;
  return (V)((VI)y | sign);
}

// GELU, x (1 + erf(x / d)) / 2 with d = sqrt 2 (passed in), through the complement
// q = erfc(|x| / d) of Abramowitz & Stegun 7.1.26 on a = |x| / d: q = t (a1 + t (... a5))
// exp(-a^2), t = 1 / (1 + p a), absolute error under 1.5e-7. Then GELU is x (1 - q / 2) for
// x >= 0 and x q / 2 below, so the negative tail keeps q's relative accuracy instead of
// losing it to 1 + erf cancelling. One division, against f32vec_erf's two branches and a
// second division for x / d: GELU follows the widest Linear layers of ConvNeXt-style blocks.
template <int L>
inline typename F32Vec<L>::type f32vec_gelu(typename F32Vec<L>::type x, float d) {
  typedef typename F32Vec<L>::type V;
  typedef typename I32Vec<L>::type VI;
  V a = (V)((VI)x & ~(VI)f32vec_splat<L>(-0.f)) * f32vec_splat<L>(1.f / d);
  a = a > f32vec_splat<L>(10.f) ? f32vec_splat<L>(10.f) : a;
  const V half_q = f32vec_erfc_as<L>(a) * f32vec_splat<L>(0.5f);
  return x * (x >= f32vec_splat<L>(0.f) ? f32vec_splat<L>(1.f) - half_q : half_q);
}

template <int L, dlas::Activation A>
inline typename F32Vec<L>::type f32vec_activate(typename F32Vec<L>::type v, float p0, float p1) {
  typedef typename F32Vec<L>::type V;
  using dlas::Activation;
  const V zero = f32vec_splat<L>(0.f), one = f32vec_splat<L>(1.f);
  if constexpr (A == Activation::kRelu) {
    v = v > zero ? v : zero;
  } else if constexpr (A == Activation::kClip) {
    const V lo = f32vec_splat<L>(p0), hi = f32vec_splat<L>(p1);
    v = v < lo ? lo : v;
    v = v > hi ? hi : v;
  } else if constexpr (A == Activation::kSigmoid) {
    v = f32vec_sigmoid<L>(v);
  } else if constexpr (A == Activation::kSilu) {
    v = v * f32vec_sigmoid<L>(v);
  } else if constexpr (A == Activation::kHardSigmoid) {
    V t = f32vec_splat<L>(p0) * v + f32vec_splat<L>(p1);
    t = t < zero ? zero : t;
    v = t > one ? one : t;
  } else if constexpr (A == Activation::kHardSwish) {
    V t = v / f32vec_splat<L>(6.f) + f32vec_splat<L>(0.5f);
    t = t < zero ? zero : t;
    t = t > one ? one : t;
    v = v * t;
  } else if constexpr (A == Activation::kErf) {
    v = f32vec_erf<L>(v);
  } else if constexpr (A == Activation::kGelu) {
    v = f32vec_gelu<L>(v, p0);
  }
  return v;
}

template <int L, dlas::Activation A>
inline void f32_vepilogue_act(size_t n, float* y, float bias, const float* residual, float p0,
                              float p1) {
  typedef typename F32Vec<L>::type V;
  const V vb = f32vec_splat<L>(bias);
  size_t i = 0;
  for (; i + L <= n; i += L) {
    V v = f32vec_load<L>(y + i) + vb;
    if (residual) v += f32vec_load<L>(residual + i);
    f32vec_store<L>(y + i, f32vec_activate<L, A>(v, p0, p1));
  }
  if (i < n) {
    float ty[L], tr[L];
    for (int j = 0; j < L; ++j) ty[j] = tr[j] = 0.f;
    for (size_t j = i; j < n; ++j) {
      ty[j - i] = y[j];
      if (residual) tr[j - i] = residual[j];
    }
    V v = f32vec_load<L>(ty) + vb;
    if (residual) v += f32vec_load<L>(tr);
    f32vec_store<L>(ty, f32vec_activate<L, A>(v, p0, p1));
    for (size_t j = i; j < n; ++j) y[j] = ty[j - i];
  }
}

template <int L>
inline void f32_vepilogue_vec(size_t n, float* y, float bias, const float* residual,
                              dlas::Activation act, float p0, float p1) {
  using dlas::Activation;
  switch (act) {
    case Activation::kNone:
      return f32_vepilogue_act<L, Activation::kNone>(n, y, bias, residual, p0, p1);
    case Activation::kRelu:
      return f32_vepilogue_act<L, Activation::kRelu>(n, y, bias, residual, p0, p1);
    case Activation::kClip:
      return f32_vepilogue_act<L, Activation::kClip>(n, y, bias, residual, p0, p1);
    case Activation::kSigmoid:
      return f32_vepilogue_act<L, Activation::kSigmoid>(n, y, bias, residual, p0, p1);
    case Activation::kSilu:
      return f32_vepilogue_act<L, Activation::kSilu>(n, y, bias, residual, p0, p1);
    case Activation::kHardSigmoid:
      return f32_vepilogue_act<L, Activation::kHardSigmoid>(n, y, bias, residual, p0, p1);
    case Activation::kHardSwish:
      return f32_vepilogue_act<L, Activation::kHardSwish>(n, y, bias, residual, p0, p1);
    case Activation::kErf:
      return f32_vepilogue_act<L, Activation::kErf>(n, y, bias, residual, p0, p1);
    case Activation::kGelu:
      return f32_vepilogue_act<L, Activation::kGelu>(n, y, bias, residual, p0, p1);
  }
}

}  // namespace

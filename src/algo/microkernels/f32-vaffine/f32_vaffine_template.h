// The f32 per-channel affine y = act(x * scale + shift) written once over a GCC vector type;
// f32_vaffine__<isa>.cc instantiate it with their lane count. A run of lanes == L (a channel
// block as wide as the vector) keeps scale and shift in registers per lane; lanes == 1 (an
// NCHW plane) splats them; any other block width computes the affine per element and then
// the activation through the epilogue kernel. Anonymous namespace: internal linkage per TU.
#pragma once

#include <cstddef>

#include "algo/microkernels/f32-vepilogue/f32_vepilogue_template.h"

namespace {

template <int L, dlas::Activation A>
inline void f32_vaffine_act(size_t n, const float* x, typename F32Vec<L>::type s,
                            typename F32Vec<L>::type t, float* y, float p0, float p1) {
  typedef typename F32Vec<L>::type V;
  size_t i = 0;
  for (; i + L <= n; i += L)
    f32vec_store<L>(y + i, f32vec_activate<L, A>(f32vec_load<L>(x + i) * s + t, p0, p1));
  if (i < n) {  // only when lanes == 1: the tail as one vector through a stack buffer
    float tx[L];
    for (int j = 0; j < L; ++j) tx[j] = 0.f;
    for (size_t j = i; j < n; ++j) tx[j - i] = x[j];
    const V v = f32vec_activate<L, A>(f32vec_load<L>(tx) * s + t, p0, p1);
    f32vec_store<L>(tx, v);
    for (size_t j = i; j < n; ++j) y[j] = tx[j - i];
  }
}

template <int L>
inline void f32_vaffine_vec(size_t pixels, size_t lanes, const float* x, const float* scale,
                            const float* shift, float* y, dlas::Activation act, float p0,
                            float p1) {
  using dlas::Activation;
  typedef typename F32Vec<L>::type V;
  if (lanes != 1 && lanes != static_cast<size_t>(L)) {
    for (size_t p = 0; p < pixels; ++p)
      for (size_t l = 0; l < lanes; ++l) y[p * lanes + l] = x[p * lanes + l] * scale[l] + shift[l];
    return f32_vepilogue_vec<L>(pixels * lanes, y, 0.f, nullptr, act, p0, p1);
  }
  const V s = lanes == 1 ? f32vec_splat<L>(scale[0]) : f32vec_load<L>(scale);
  const V t = lanes == 1 ? f32vec_splat<L>(shift[0]) : f32vec_load<L>(shift);
  const size_t n = pixels * lanes;
  switch (act) {
    case Activation::kNone:
      return f32_vaffine_act<L, Activation::kNone>(n, x, s, t, y, p0, p1);
    case Activation::kRelu:
      return f32_vaffine_act<L, Activation::kRelu>(n, x, s, t, y, p0, p1);
    case Activation::kClip:
      return f32_vaffine_act<L, Activation::kClip>(n, x, s, t, y, p0, p1);
    case Activation::kSigmoid:
      return f32_vaffine_act<L, Activation::kSigmoid>(n, x, s, t, y, p0, p1);
    case Activation::kSilu:
      return f32_vaffine_act<L, Activation::kSilu>(n, x, s, t, y, p0, p1);
    case Activation::kHardSigmoid:
      return f32_vaffine_act<L, Activation::kHardSigmoid>(n, x, s, t, y, p0, p1);
    case Activation::kHardSwish:
      return f32_vaffine_act<L, Activation::kHardSwish>(n, x, s, t, y, p0, p1);
    case Activation::kErf:
      return f32_vaffine_act<L, Activation::kErf>(n, x, s, t, y, p0, p1);
    case Activation::kGelu:
      return f32_vaffine_act<L, Activation::kGelu>(n, x, s, t, y, p0, p1);
  }
}

}  // namespace

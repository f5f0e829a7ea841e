// bf16 <-> f32 rows written once over GCC vector types (L lanes); instantiated by the
// bf16_vcvt__<isa>.cc TUs. Anonymous namespace: internal linkage per TU (see f32_gemm_template.h).
// Narrowing is dlas::f32_to_bf16 lane by lane: add 0x7fff + the kept lsb (nearest even),
// NaNs quieted instead of rounded (a NaN payload could otherwise carry into Inf).
#pragma once

#include <cstddef>
#include <cstdint>

namespace {

template <int L>
struct Bf16Vec {
  typedef uint32_t u32 __attribute__((vector_size(L * 4)));
  typedef uint32_t u32u __attribute__((vector_size(L * 4), aligned(4), may_alias));
  typedef uint16_t u16 __attribute__((vector_size(L * 2)));
  typedef uint16_t u16u __attribute__((vector_size(L * 2), aligned(2), may_alias));
  typedef int32_t i32 __attribute__((vector_size(L * 4)));
};

template <int L>
inline void bf16_widen_vec(size_t n, const uint16_t* x, float* y) {
  typedef Bf16Vec<L> T;
  size_t i = 0;
  for (; i + L <= n; i += L) {
    const typename T::u16 h = *reinterpret_cast<const typename T::u16u*>(x + i);
    const typename T::u32 w = __builtin_convertvector(h, typename T::u32) << 16;
    *reinterpret_cast<typename T::u32u*>(y + i) = w;
  }
  for (; i < n; ++i) {
    const uint32_t u = static_cast<uint32_t>(x[i]) << 16;
    __builtin_memcpy(y + i, &u, 4);
  }
}

inline uint16_t bf16_narrow_one(float f) {
  uint32_t u;
  __builtin_memcpy(&u, &f, 4);
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((u >> 16) | 0x40);
  u += 0x7fffu + ((u >> 16) & 1u);
  return static_cast<uint16_t>(u >> 16);
}

template <int L>
inline void bf16_narrow_vec(size_t n, const float* x, uint16_t* y) {
  typedef Bf16Vec<L> T;
  size_t i = 0;
  for (; i + L <= n; i += L) {
    const typename T::u32 u = *reinterpret_cast<const typename T::u32u*>(x + i);
    const typename T::u32 rounded = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
    const typename T::u32 quiet = (u >> 16) | 0x40u;
    const typename T::i32 nan = (u & 0x7fffffffu) > 0x7f800000u;
    const typename T::u32 r = nan ? quiet : rounded;
    *reinterpret_cast<typename T::u16u*>(y + i) = __builtin_convertvector(r, typename T::u16);
  }
  for (; i < n; ++i) y[i] = bf16_narrow_one(x[i]);
}

}  // namespace

// The f32 GEMM microkernel written once over a GCC vector-extension type; each
// ISA translation unit (f32_gemm_<MR>x<NR>__<isa>.cc) instantiates it with its
// lane count and tile. The whole body is in an anonymous namespace so every
// instantiation has internal linkage: the linker can never hand the AVX2 path
// a function compiled with AVX-512 flags (an ODR merge would).
//
// Contract: src/algo/microkernels/f32-gemm/f32_gemm.h. Only std-free code here (no
// std::min/max on floats: those are out-of-line-able and would be ODR-merged
// across TUs compiled with different flags).
#pragma once

#include <cstddef>
#include <cstdint>

namespace {

template <int L>
struct F32Vec;
template <>
struct F32Vec<8> {
  typedef float type __attribute__((vector_size(32)));
  // Unaligned, aliasing-safe access to 8 floats.
  typedef float unaligned __attribute__((vector_size(32), aligned(4), may_alias));
};
template <>
struct F32Vec<16> {
  typedef float type __attribute__((vector_size(64)));
  typedef float unaligned __attribute__((vector_size(64), aligned(4), may_alias));
};

template <int L>
inline typename F32Vec<L>::type f32vec_load(const float* p) {
  return *reinterpret_cast<const typename F32Vec<L>::unaligned*>(p);
}
template <int L>
inline void f32vec_store(float* p, typename F32Vec<L>::type v) {
  *reinterpret_cast<typename F32Vec<L>::unaligned*>(p) = v;
}

// Broadcast. Written as an initializer list: `V{} + s` is not an exact splat
// (-0.f + 0.f == +0.f), so GCC emits a scalar add before the broadcast.
template <int L>
inline typename F32Vec<L>::type f32vec_splat(float s) {
  if constexpr (L == 8) {
    return F32Vec<8>::type{s, s, s, s, s, s, s, s};
  } else {
    return F32Vec<16>::type{s, s, s, s, s, s, s, s, s, s, s, s, s, s, s, s};
  }
}

// C[MR][NV*L] tile: MR*NV accumulators live in registers for the whole k loop
// (the tile is chosen per ISA so that MR*NV + NV (B row) + 1 (A broadcast)
// registers fit the register file). Rows m..MR-1 are computed from the zero
// padding of the packed A panel and simply not stored.
template <int MR, int NV, int L>
inline void f32_gemm_vec(size_t m, size_t n, size_t k, const float* a, const float* b,
                         const int64_t* b_off, float* c, size_t ldc, const float* bias,
                         bool accumulate, float min, float max) {
  typedef typename F32Vec<L>::type V;
  constexpr size_t kNr = static_cast<size_t>(NV * L);
  V acc[MR][NV];
#pragma GCC unroll 32
  for (int i = 0; i < MR; ++i) {
    const float init = (!accumulate && bias && static_cast<size_t>(i) < m) ? bias[i] : 0.f;
#pragma GCC unroll 8
    for (int j = 0; j < NV; ++j) acc[i][j] = f32vec_splat<L>(init);
  }
  for (size_t kk = 0; kk < k; ++kk) {
    const float* brow = b + b_off[kk];
    V bv[NV];
#pragma GCC unroll 8
    for (int j = 0; j < NV; ++j) bv[j] = f32vec_load<L>(brow + j * L);
#pragma GCC unroll 32
    for (int i = 0; i < MR; ++i) {
      const V av = f32vec_splat<L>(a[i]);
#pragma GCC unroll 8
      for (int j = 0; j < NV; ++j) acc[i][j] += av * bv[j];
    }
    a += MR;
  }
  const V vmin = f32vec_splat<L>(min), vmax = f32vec_splat<L>(max);
  if (n == kNr) {
#pragma GCC unroll 32
    for (int i = 0; i < MR; ++i) {
      if (static_cast<size_t>(i) >= m) break;
      float* crow = c + static_cast<size_t>(i) * ldc;
#pragma GCC unroll 8
      for (int j = 0; j < NV; ++j) {
        V v = acc[i][j];
        if (accumulate) v += f32vec_load<L>(crow + j * L);
        v = v < vmin ? vmin : v;
        v = v > vmax ? vmax : v;
        f32vec_store<L>(crow + j * L, v);
      }
    }
    return;
  }
  // Column tail (edge tiles only): spill the row, then element by element. Constant
  // indices only, so the accumulators stay in registers in the loop above.
#pragma GCC unroll 32
  for (int i = 0; i < MR; ++i) {
    if (static_cast<size_t>(i) >= m) break;
    float* crow = c + static_cast<size_t>(i) * ldc;
    float tmp[kNr];
#pragma GCC unroll 8
    for (int j = 0; j < NV; ++j) f32vec_store<L>(tmp + j * L, acc[i][j]);
    for (size_t j = 0; j < n; ++j) {
      float v = tmp[j];
      if (accumulate) v += crow[j];
      v = v < min ? min : v;
      v = v > max ? max : v;
      crow[j] = v;
    }
  }
}

}  // namespace

// Defines the list's kernel fn as the MR x (NV * L) tile of f32_gemm_vec; used inside
// namespace dlas::ukernel by the translation unit of fn's ISA.
#define DLAS_F32_GEMM_KERNEL(fn, MR, NV, L)                                                   \
  void fn(size_t m, size_t n, size_t k, const float* a, const float* b, const int64_t* b_off, \
          float* c, size_t ldc, const float* bias, bool accumulate, float min, float max) {   \
    f32_gemm_vec<MR, NV, L>(m, n, k, a, b, b_off, c, ldc, bias, accumulate, min, max);        \
  }

// The int8 fully-connected microkernel written once over GCC vector-extension types and the
// dot-product policies of qs8-gemm (qs8_gemm_*_policy.h):
//   P::dot(acc, b, a)  acc + the 4-byte group dot product per 32-bit lane; b is the u8 (or
//                      s16 pair) operand, here one group of one row of x broadcast, a the
//                      s8 (or s16 pair) operand, here one group of L output columns of W
//   P::fma(a, b, c)    a * b + c with one rounding (vfmadd)
// Each ISA translation unit instantiates it with its policy. The whole body is in an
// anonymous namespace: internal linkage per TU (no ODR merge of AVX-512 code into the AVX2
// path).
//
// Contract: src/algo/microkernels/qs8-fc/qs8_fc.h.
#pragma once

#include <cstddef>
#include <cstdint>

#include "algo/microkernels/qs8-fc/qs8_fc.h"
#include "algo/microkernels/qs8-gemm/qs8_gemm_template.h"

namespace {

// Y[MR][NV*L] tile; MR*NV accumulators + NV W vectors + 1 broadcast in registers.
template <class P, int MR, int NV>
inline void qs8_fc_vec(size_t m, size_t n, size_t kq, const uint8_t* x, size_t ldx, const void* w_,
                       float* y, size_t ldy, const dlas::ukernel::QS8FcParams& p) {
  constexpr int L = P::kLanes;
  typedef typename QVec<L>::i32 I;
  typedef typename QVec<L>::f32 F;
  const uint8_t* w = static_cast<const uint8_t*>(w_);
  const uint8_t* xr[MR];
#pragma GCC unroll 32
  for (int i = 0; i < MR; ++i) xr[i] = x + (static_cast<size_t>(i) < m ? i : m - 1) * ldx;
  I acc[MR][NV];
#pragma GCC unroll 8
  for (int v = 0; v < NV; ++v) __builtin_memcpy(&acc[0][v], p.init + v * L, sizeof(I));
#pragma GCC unroll 32
  for (int i = 1; i < MR; ++i)
#pragma GCC unroll 8
    for (int v = 0; v < NV; ++v) acc[i][v] = acc[0][v];
  // One group q into the accumulator set a.
  auto step = [&](I(&a)[MR][NV], size_t q) __attribute__((always_inline)) {
    const uint8_t* wq = w + q * NV * L * 4;
    I wv[NV];
#pragma GCC unroll 8
    for (int v = 0; v < NV; ++v) __builtin_memcpy(&wv[v], wq + v * L * 4, sizeof(I));
#pragma GCC unroll 32
    for (int i = 0; i < MR; ++i) {
      int32_t g;
      __builtin_memcpy(&g, xr[i] + q * 4, 4);
      const I xv = I{} + g;
#pragma GCC unroll 8
      for (int v = 0; v < NV; ++v) a[i][v] = P::dot(a[i][v], xv, wv[v]);
    }
  };
  size_t q = 0;
  if constexpr (MR * NV <= 4) {
    // Few accumulators (the single-row tiles) would wait on the dot product's latency:
    // a second set takes the odd groups (int32 sums, exact in any order).
    I acc2[MR][NV] = {};
    for (; q + 2 <= kq; q += 2) {
      step(acc, q);
      step(acc2, q + 1);
    }
#pragma GCC unroll 32
    for (int i = 0; i < MR; ++i)
#pragma GCC unroll 8
      for (int v = 0; v < NV; ++v) acc[i][v] += acc2[i][v];
  }
  for (; q < kq; ++q) step(acc, q);
  F vm[NV], vb[NV];
#pragma GCC unroll 8
  for (int v = 0; v < NV; ++v) {
    __builtin_memcpy(&vm[v], p.mult + v * L, sizeof(F));
    __builtin_memcpy(&vb[v], p.bias + v * L, sizeof(F));
  }
  const F vlo = F{} + p.lo, vhi = F{} + p.hi;
#pragma GCC unroll 32
  for (int i = 0; i < MR; ++i) {
    if (static_cast<size_t>(i) >= m) break;
    float* yr = y + i * ldy;
#pragma GCC unroll 8
    for (int v = 0; v < NV; ++v) {
      F f = P::fma(__builtin_convertvector(acc[i][v], F), vm[v], vb[v]);
      f = f < vlo ? vlo : f;
      f = f > vhi ? vhi : f;
      if (static_cast<size_t>((v + 1) * L) <= n) {
        __builtin_memcpy(yr + v * L, &f, sizeof(F));
      } else {  // column tail: the first n - v * L lanes, never past column n
        float tmp[L];
        __builtin_memcpy(tmp, &f, sizeof(F));
        for (size_t j = static_cast<size_t>(v * L); j < n; ++j) yr[j] = tmp[j - v * L];
        break;
      }
    }
  }
}

}  // namespace

// Defines the list's kernel fn as the MR x (NV * lanes) tile of qs8_fc_vec with dot-product
// policy P; used inside namespace dlas::ukernel by the translation unit of P's ISA.
#define DLAS_QS8_FC_KERNEL(fn, P, MR, NV)                                                       \
  void fn(size_t m, size_t n, size_t kq, const uint8_t* x, size_t ldx, const void* w, float* y, \
          size_t ldy, const QS8FcParams& p) {                                                   \
    qs8_fc_vec<P, MR, NV>(m, n, kq, x, ldx, w, y, ldy, p);                                      \
  }

// The native bf16 GEMM microkernel (h16_gemm.h) written once over a pair-dot policy P:
//   P::kLanes            f32 lanes per vector (16 on zmm)
//   P::V                 float vector of kLanes lanes
//   P::PV                uint32 vector of kLanes lanes, each a pair of bf16 (low = even step)
//   P::dot(acc, a, b)    vdpbf16ps: acc[l] += a.hi*b.hi, then += a.lo*b.lo (f32, RNE, DAZ/FTZ)
// The avx512bf16 TUs instantiate it with _mm512_dpbf16_ps; a test-only __avx2.cc TU with an
// exact software model of the instruction. Anonymous namespace (see f32_gemm_template.h).
#pragma once

#include <cstddef>
#include <cstdint>

namespace {

template <class PV>
inline PV bf16_pair_splat16(uint32_t s) {
  return PV{s, s, s, s, s, s, s, s, s, s, s, s, s, s, s, s};
}

// MR x NV*L tile of f32 accumulators; each step consumes a pair of reduction steps: one
// 32-bit A broadcast (both bf16 of row i) against NV vectors of B pairs.
template <int MR, int NV, class P>
inline void bf16_gemm_dot(size_t m, size_t n, size_t k, const uint16_t* a, const uint16_t* b,
                          size_t /*flush*/, float* c, size_t ldc, bool accumulate) {
  constexpr int L = P::kLanes;
  static_assert(L == 16, "bf16_pair_splat16");
  constexpr size_t kNr = static_cast<size_t>(NV * L);
  typedef typename P::V V;
  typedef typename P::PV PV;
  typedef uint32_t PVu __attribute__((vector_size(sizeof(PV)), aligned(4), may_alias));
  V acc[MR][NV];
#pragma GCC unroll 32
  for (int i = 0; i < MR; ++i)
#pragma GCC unroll 8
    for (int j = 0; j < NV; ++j) acc[i][j] = V{};
  for (size_t kk = 0; kk < k; kk += 2) {
    PV bv[NV];
#pragma GCC unroll 8
    for (int j = 0; j < NV; ++j) bv[j] = *reinterpret_cast<const PVu*>(b + 2 * j * L);
#pragma GCC unroll 32
    for (int i = 0; i < MR; ++i) {
      uint32_t pair;
      __builtin_memcpy(&pair, a + 2 * i, 4);
      const PV av = bf16_pair_splat16<PV>(pair);
#pragma GCC unroll 8
      for (int j = 0; j < NV; ++j) acc[i][j] = P::dot(acc[i][j], av, bv[j]);
    }
    a += 2 * MR;
    b += 2 * kNr;
  }
  typedef float Vu __attribute__((vector_size(sizeof(V)), aligned(4), may_alias));
  if (n == kNr) {  // full rows: whole-vector stores (small reductions are store-bound)
#pragma GCC unroll 32
    for (int i = 0; i < MR; ++i) {
      if (static_cast<size_t>(i) >= m) break;
      Vu* crow = reinterpret_cast<Vu*>(c + static_cast<size_t>(i) * ldc);
#pragma GCC unroll 8
      for (int j = 0; j < NV; ++j) crow[j] = accumulate ? crow[j] + acc[i][j] : acc[i][j];
    }
    return;
  }
#pragma GCC unroll 32
  for (int i = 0; i < MR; ++i) {
    if (static_cast<size_t>(i) >= m) break;
    float tmp[kNr];
#pragma GCC unroll 8
    for (int j = 0; j < NV; ++j) __builtin_memcpy(tmp + j * L, &acc[i][j], sizeof(V));
    float* crow = c + static_cast<size_t>(i) * ldc;
    if (accumulate)
      for (size_t j = 0; j < n; ++j) crow[j] += tmp[j];
    else
      for (size_t j = 0; j < n; ++j) crow[j] = tmp[j];
  }
}

}  // namespace

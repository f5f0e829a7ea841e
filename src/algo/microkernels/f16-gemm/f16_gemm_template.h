// The native f16 GEMM microkernel (h16_gemm.h) written once over a half-arithmetic policy P:
//   P::kLanes        halves per vector
//   P::HV            a vector of kLanes halves
//   P::zero(), P::load(const uint16_t*), P::splat(uint16_t)
//   P::fma(a, b, c)  a * b + c rounded once to f16 (vfmadd231ph)
//   P::widen(v, float* out)  the kLanes halves as f32 (exact)
// The avx512fp16 TUs instantiate it with the AVX512-FP16 intrinsics; a test-only __avx2.cc
// TU instantiates it with an exact software model of vfmadd231ph, so this logic (half
// accumulators, flushes into f32 C) is tested on machines without the instructions.
// Anonymous namespace: internal linkage per TU (see f32_gemm_template.h).
#pragma once

#include <cstddef>
#include <cstdint>

namespace {

// MR x NV*L tile; MR*NV half accumulators stay in registers for `flush` reduction steps,
// then are widened and added into the f32 C tile (caller scratch, in L1).
template <int MR, int NV, class P>
inline void f16_gemm_native(size_t m, size_t n, size_t k, const uint16_t* a, const uint16_t* b,
                            size_t flush, float* c, size_t ldc, bool accumulate) {
  constexpr int L = P::kLanes;
  constexpr size_t kNr = static_cast<size_t>(NV * L);
  const size_t chunk = flush == 0 || flush > k ? k : flush;
  bool add = accumulate;
  size_t kk = 0;
  do {
    const size_t end = k - kk < chunk ? k : kk + chunk;
    typename P::HV acc[MR][NV];
#pragma GCC unroll 32
    for (int i = 0; i < MR; ++i)
#pragma GCC unroll 8
      for (int j = 0; j < NV; ++j) acc[i][j] = P::zero();
    for (; kk < end; ++kk) {
      typename P::HV bv[NV];
#pragma GCC unroll 8
      for (int j = 0; j < NV; ++j) bv[j] = P::load(b + j * L);
#pragma GCC unroll 32
      for (int i = 0; i < MR; ++i) {
        const typename P::HV av = P::splat(a[i]);
#pragma GCC unroll 8
        for (int j = 0; j < NV; ++j) acc[i][j] = P::fma(av, bv[j], acc[i][j]);
      }
      a += MR;
      b += kNr;
    }
    // Flush: rows past m are the packed zero padding, never stored.
#pragma GCC unroll 32
    for (int i = 0; i < MR; ++i) {
      if (static_cast<size_t>(i) >= m) break;
      float tmp[kNr];
#pragma GCC unroll 8
      for (int j = 0; j < NV; ++j) P::widen(acc[i][j], tmp + j * L);
      float* crow = c + static_cast<size_t>(i) * ldc;
      if (n == kNr) {  // full rows: a constant trip count, whole-vector loads and stores
        if (add)
          for (size_t j = 0; j < kNr; ++j) crow[j] += tmp[j];
        else
          for (size_t j = 0; j < kNr; ++j) crow[j] = tmp[j];
      } else if (add) {
        for (size_t j = 0; j < n; ++j) crow[j] += tmp[j];
      } else {
        for (size_t j = 0; j < n; ++j) crow[j] = tmp[j];
      }
    }
    add = true;
  } while (kk < k);
}

}  // namespace

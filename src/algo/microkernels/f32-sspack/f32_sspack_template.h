// The sparse spatial-pack tile kernel (contract: src/algo/microkernels/f32_sspack.h),
// written once over a GCC vector type V of L lanes; each ISA TU instantiates it for every
// tile shape. Anonymous namespace: each TU keeps its own copy, so the linker can never
// hand the AVX2 path an AVX-512 instantiation. No std:: helpers (ODR across ISA TUs).
#pragma once

#include <cstddef>
#include <cstdint>

#include "algo/microkernels/f32_sspack.h"

namespace {

// Per stored block: NV weight vector loads, VH*VW broadcasts (each one load uop) and
// VH*VW*NV FMAs into independent accumulators -- >= 8 of them keep both FMA pipes busy
// through the 4-cycle latency, and the broadcasts stay under Zen3's 3 loads per cycle.
template <class V, int L, int NV, int VH, int VW>
void sspack_tile(size_t nblocks, const float* in, size_t row_stride, const float* w,
                 const int32_t* dmap, float* out, float min, float max, bool accumulate) {
  V acc[VH * VW][NV];
#pragma GCC unroll 4
  for (int v = 0; v < NV; ++v) {
    V b;
    __builtin_memcpy(&b, w + v * L, sizeof(V));
#pragma GCC unroll 32
    for (int p = 0; p < VH * VW; ++p) acc[p][v] = b;
  }
  w += NV * L;
  if (accumulate) {
#pragma GCC unroll 32
    for (int p = 0; p < VH * VW; ++p)
#pragma GCC unroll 4
      for (int v = 0; v < NV; ++v) {
        V o;
        __builtin_memcpy(&o, out + (p * NV + v) * L, sizeof(V));
        acc[p][v] += o;
      }
  }
  const char* ip = reinterpret_cast<const char*>(in);
  for (; nblocks != 0; --nblocks) {
    ip += *dmap++;
    V wv[NV];
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) __builtin_memcpy(&wv[v], w + v * L, sizeof(V));
    w += NV * L;
#pragma GCC unroll 4
    for (int vh = 0; vh < VH; ++vh) {
      const float* row = reinterpret_cast<const float*>(ip + static_cast<size_t>(vh) * row_stride);
#pragma GCC unroll 8
      for (int vw = 0; vw < VW; ++vw) {
        const V xv = row[vw] - V{};  // broadcast (x - 0 folds; 0 + x does not)
#pragma GCC unroll 4
        for (int v = 0; v < NV; ++v) acc[vh * VW + vw][v] += xv * wv[v];
      }
    }
  }
  const V vmin = min - V{}, vmax = max - V{};
#pragma GCC unroll 32
  for (int p = 0; p < VH * VW; ++p)
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) {
      V a = acc[p][v];
      a = a < vmin ? vmin : a;  // NaN passes through, as in the scalar epilogue
      a = a > vmax ? vmax : a;
      __builtin_memcpy(out + (p * NV + v) * L, &a, sizeof(V));
    }
}

template <class V, int L>
dlas::ukernel::F32SspackFn sspack_select(int vectors, int vh, int vw) {
#define DLAS_SSPACK_CASE(nv, h, w_) \
  if (vectors == nv && vh == h && vw == w_) return &sspack_tile<V, L, nv, h, w_>;
#define DLAS_SSPACK_VW(nv, h) \
  DLAS_SSPACK_CASE(nv, h, 2)  \
  DLAS_SSPACK_CASE(nv, h, 4) DLAS_SSPACK_CASE(nv, h, 6) DLAS_SSPACK_CASE(nv, h, 8)
#define DLAS_SSPACK_VH(nv) \
  DLAS_SSPACK_VW(nv, 1) DLAS_SSPACK_VW(nv, 2) DLAS_SSPACK_VW(nv, 3) DLAS_SSPACK_VW(nv, 4)
  DLAS_SSPACK_VH(1)
  DLAS_SSPACK_VH(2)
#undef DLAS_SSPACK_VH
#undef DLAS_SSPACK_VW
#undef DLAS_SSPACK_CASE
  return nullptr;
}

}  // namespace

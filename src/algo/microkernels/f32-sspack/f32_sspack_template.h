// The sparse spatial-pack tile kernel (contract: src/algo/microkernels/f32-sspack/f32_sspack.h),
// written once over a GCC vector type V of L lanes; each ISA TU instantiates it for every
// tile shape. Anonymous namespace: each TU keeps its own copy, so the linker can never
// hand the AVX2 path an AVX-512 instantiation. No std:: helpers (ODR across ISA TUs).
#pragma once

#include <cstddef>
#include <cstdint>

#include "algo/microkernels/f32-sspack/f32_sspack.h"

namespace {

// Per stored block: NV weight vector loads, VH*VW broadcasts (each one load uop) and
// VH*VW*NV FMAs into independent accumulators -- >= 8 of them keep both FMA pipes busy
// through the 4-cycle latency, and the broadcasts stay under Zen3's 3 loads per cycle.
// r[p] (p < 8: pixels, lanes: 8 channels) -> r[l] (lanes: 8 pixels) with the unpack/shuffle
// ladder (unpcklps/unpckhps, shufps, vperm2f128 on AVX2).
template <class V>
inline void sspack_transpose8(V* r) {
  typedef int __attribute__((vector_size(32))) M;
  V t[8], u[8];
  for (int i = 0; i < 8; i += 2) {
    t[i] = __builtin_shuffle(r[i], r[i + 1], M{0, 8, 1, 9, 4, 12, 5, 13});
    t[i + 1] = __builtin_shuffle(r[i], r[i + 1], M{2, 10, 3, 11, 6, 14, 7, 15});
  }
  for (int i = 0; i < 8; i += 4)
    for (int j = 0; j < 2; ++j) {
      u[i + j] = __builtin_shuffle(t[i + j], t[i + j + 2], M{0, 1, 8, 9, 4, 5, 12, 13});
      u[i + j + 2] = __builtin_shuffle(t[i + j], t[i + j + 2], M{2, 3, 10, 11, 6, 7, 14, 15});
    }
  // u[0..3]: channels (0, 1, 2, 3) | (4, 5, 6, 7) of pixels 0-3; u[4..7]: of pixels 4-7.
  const int order[4] = {0, 2, 1, 3};
  for (int j = 0; j < 4; ++j) {
    r[j] = __builtin_shuffle(u[order[j]], u[order[j] + 4], M{0, 1, 2, 3, 8, 9, 10, 11});
    r[j + 4] = __builtin_shuffle(u[order[j]], u[order[j] + 4], M{4, 5, 6, 7, 12, 13, 14, 15});
  }
}

template <class V, int L, int NV, int VH, int VW>
void sspack_tile(size_t nblocks, const float* in, size_t row_stride, const float* w,
                 const int32_t* dmap, float* out, float min, float max, bool accumulate,
                 bool transpose) {
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
      acc[p][v] = a;
    }
  if (!transpose) {
#pragma GCC unroll 32
    for (int p = 0; p < VH * VW; ++p)
#pragma GCC unroll 4
      for (int v = 0; v < NV; ++v) __builtin_memcpy(out + (p * NV + v) * L, &acc[p][v], sizeof(V));
    return;
  }
  // Channel-major [VC][VH][VW]: each channel's tile rows contiguous for the NCHW copy.
  if constexpr (L == 8 && VW <= 8) {
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v)
#pragma GCC unroll 4
      for (int y = 0; y < VH; ++y) {
        V r[8];
#pragma GCC unroll 8
        for (int x = 0; x < 8; ++x) r[x] = x < VW ? acc[y * VW + x][v] : V{};
        sspack_transpose8(r);
#pragma GCC unroll 8
        for (int l = 0; l < 8; ++l)
          __builtin_memcpy(out + ((v * 8 + l) * VH + y) * VW, &r[l], VW * sizeof(float));
      }
  } else {
#pragma GCC unroll 32
    for (int p = 0; p < VH * VW; ++p)
      for (int v = 0; v < NV; ++v)
        for (int l = 0; l < L; ++l) out[(v * L + l) * VH * VW + p] = acc[p][v][l];
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

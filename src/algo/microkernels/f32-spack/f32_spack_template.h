// The spatial-pack tile kernel, written once over a GCC vector type V of W lanes;
// each ISA TU instantiates it for every tile shape. Anonymous namespace: each TU keeps
// its own copy, so the linker can never hand the AVX2 path an AVX-512 instantiation.
#pragma once

#include <cstddef>

#include "algo/microkernels/f32-spack/f32_spack.h"

namespace {

// Accumulators: VH * VW * NV vectors; plus NV weight vectors and one broadcast. Shapes
// that exceed the register file still compute the same result (they spill).
template <class V, int W, int NV, int VH, int VW>
void spack_tile(size_t kc, size_t kh, size_t kw, const float* x, size_t cs, size_t rs, size_t khs,
                size_t kws, const float* w, float* out) {
  V acc[VH * VW][NV];
  for (int p = 0; p < VH * VW; ++p)
    for (int v = 0; v < NV; ++v) acc[p][v] = V{};
  for (size_t ci = 0; ci < kc; ++ci) {
    const float* xc = x + ci * cs;
    for (size_t a = 0; a < kh; ++a) {
      const float* xa = xc + a * khs;
      for (size_t b = 0; b < kw; ++b) {
        const float* xb = xa + b * kws;
        V wv[NV];
        for (int v = 0; v < NV; ++v) __builtin_memcpy(&wv[v], w + v * W, sizeof(V));
        w += NV * W;
        for (int vh = 0; vh < VH; ++vh)
          for (int vw = 0; vw < VW; ++vw) {
            const V xv = xb[vh * rs + vw] - V{};  // broadcast (x - 0 folds; 0 + x does not)
            for (int v = 0; v < NV; ++v) acc[vh * VW + vw][v] += xv * wv[v];
          }
      }
    }
  }
  for (int p = 0; p < VH * VW; ++p)
    for (int v = 0; v < NV; ++v) __builtin_memcpy(out + (p * NV + v) * W, &acc[p][v], sizeof(V));
}

template <class V, int W>
dlas::ukernel::F32SpackFn spack_select(int vectors, int vh, int vw) {
#define DLAS_SPACK_CASE(nv, h, w_) \
  if (vectors == nv && vh == h && vw == w_) return &spack_tile<V, W, nv, h, w_>;
#define DLAS_SPACK_VW(nv, h) \
  DLAS_SPACK_CASE(nv, h, 4) DLAS_SPACK_CASE(nv, h, 6) DLAS_SPACK_CASE(nv, h, 8)
#define DLAS_SPACK_VH(nv) DLAS_SPACK_VW(nv, 1) DLAS_SPACK_VW(nv, 2) DLAS_SPACK_VW(nv, 4)
  DLAS_SPACK_VH(1)
  DLAS_SPACK_VH(2)
#undef DLAS_SPACK_VH
#undef DLAS_SPACK_VW
#undef DLAS_SPACK_CASE
  return nullptr;
}

}  // namespace

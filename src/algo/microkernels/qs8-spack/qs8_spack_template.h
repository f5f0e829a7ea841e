// The int8 spatial-pack microkernel (qs8_spack.h) written once over GCC vector types and the
// qs8 GEMM kernels' policy (P::dot, P::fma, P::kLanes: qs8_gemm_template.h); each ISA TU
// instantiates it with its intrinsics, tests/algo/qs8_logic__avx2.cc with exact models.
// Whole body in an anonymous namespace (internal linkage per TU), no std:: on vectors.
#pragma once

#include <cstddef>
#include <cstdint>

#include "algo/microkernels/qs8-gemm/qs8_gemm_template.h"
#include "algo/microkernels/qs8-spack/qs8_spack.h"

namespace {

// VH * VW * NV accumulators + NV weight vectors + 1 broadcast: the knob's tile shapes within
// the register file (16 ymm on AVX2: NV * VH * VW <= 14; 32 zmm on AVX-512: <= 28); larger
// tiles spill and are tuner candidates only. PS: the pixel step when a compile-time
// constant (4: stride 1), else 0 and ps is read at run time.
template <class P, int NV, int VH, int VW, int PS>
inline void qs8_spack_body(const dlas::ukernel::QS8SpackTile& t,
                           const dlas::ukernel::QS8GemmParams& p) {
  constexpr int L = P::kLanes, VC = NV * L;
  typedef typename QVec<L>::i32 I;
  typedef typename QVec<L>::f32 F;
  I acc[VH * VW][NV];
#pragma GCC unroll 4
  for (int v = 0; v < NV; ++v) {
    I iv;
    __builtin_memcpy(&iv, t.init + v * L, sizeof(I));
#pragma GCC unroll 32
    for (int px = 0; px < VH * VW; ++px) acc[px][v] = iv;
  }
  const size_t ps = PS ? static_cast<size_t>(PS) : t.ps;
  const uint8_t* w = t.w;
  for (size_t q = 0; q < t.kq; ++q)
    for (size_t a = 0; a < t.kh; ++a) {
      const uint8_t* xr = t.x + q * t.cs + a * t.khs;
      for (size_t b = 0; b < t.kw; ++b) {
        const uint8_t* xp = xr + b * t.kws;
        I wv[NV];
#pragma GCC unroll 4
        for (int v = 0; v < NV; ++v) __builtin_memcpy(&wv[v], w + v * L * 4, sizeof(I));
        w += VC * 4;
#pragma GCC unroll 4
        for (int vh = 0; vh < VH; ++vh) {
          const uint8_t* xrow = xp + vh * t.rs;
#pragma GCC unroll 8
          for (int vw = 0; vw < VW; ++vw) {
            int32_t g;
            __builtin_memcpy(&g, xrow + vw * ps, 4);
            const I bx = I{} + g;
#pragma GCC unroll 4
            for (int v = 0; v < NV; ++v)
              acc[vh * VW + vw][v] = P::dot(acc[vh * VW + vw][v], bx, wv[v]);
          }
        }
      }
    }
  const F vlo = F{} + p.vlo, vhi = F{} + p.vhi;
  const I zp = I{} + p.y_zp;
#pragma GCC unroll 4
  for (int v = 0; v < NV; ++v) {
    F vm;
    __builtin_memcpy(&vm, t.mult + v * L, sizeof(F));
#pragma GCC unroll 32
    for (int px = 0; px < VH * VW; ++px) {
      F r = F{};
      if (t.residual) {
        const I ri = qs8_load_bytes<P>(t.residual + px * VC + v * L, p.r_signed);
        r = __builtin_convertvector(ri - p.r_zp, F) * p.rm;
      }
      F f = P::fma(__builtin_convertvector(acc[px][v], F), vm, r);
      f = f < vlo ? vlo : f;
      f = f > vhi ? vhi : f;
      qs8_store_low_bytes<P>(qs8_round<P>(f) + zp, t.out + px * VC + v * L);
    }
  }
}

template <class P, int NV, int VH, int VW>
void qs8_spack_vec(const dlas::ukernel::QS8SpackTile& t, const dlas::ukernel::QS8GemmParams& p) {
  if (t.ps == 4)
    qs8_spack_body<P, NV, VH, VW, 4>(t, p);
  else
    qs8_spack_body<P, NV, VH, VW, 0>(t, p);
}

// Every (vectors, vh, vw) of the knob lists (qs8_spack.h).
template <class P>
dlas::ukernel::QS8SpackFn qs8_spack_select(int nv, int vh, int vw) {
#define QS8_SPACK_VW(NV, VH)                                                \
  if (nv == NV && vh == VH && vw == 4) return &qs8_spack_vec<P, NV, VH, 4>; \
  if (nv == NV && vh == VH && vw == 7) return &qs8_spack_vec<P, NV, VH, 7>; \
  if (nv == NV && vh == VH && vw == 8) return &qs8_spack_vec<P, NV, VH, 8>;
  QS8_SPACK_VW(1, 1)
  QS8_SPACK_VW(1, 2)
  QS8_SPACK_VW(1, 4)
  QS8_SPACK_VW(2, 1)
  QS8_SPACK_VW(2, 2)
  QS8_SPACK_VW(2, 4)
#undef QS8_SPACK_VW
  return nullptr;
}

}  // namespace

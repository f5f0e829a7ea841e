// The int8 depthwise plane kernel over GCC vectors of L int32 lanes (output pixels of one
// row), with the requantizing store of qs8_gemm_template.h; P supplies kLanes and fma.
// Anonymous namespace: internal linkage per ISA TU.
#pragma once

#include "algo/microkernels/qs8-dwconv/qs8_dwconv.h"
#include "algo/microkernels/qs8-gemm/qs8_gemm_template.h"

namespace {

template <class P>
inline void qs8_dwconv_vec(const dlas::ukernel::QS8DwPlane& d, int32_t bias, float mult,
                           const void* residual, void* y, const dlas::ukernel::QS8GemmParams& p) {
  constexpr int L = P::kLanes;
  typedef typename QVec<L>::i32 I;
  typedef int16_t S16 __attribute__((vector_size(2 * L)));
  const uint8_t* rb = static_cast<const uint8_t*>(residual);
  uint8_t* yb = static_cast<uint8_t*>(y);
  for (int64_t oy = 0; oy < d.oh; ++oy)
    for (int64_t ox = 0; ox < d.ow; ox += L) {
      I acc = I{} + bias;
      for (int ky = 0; ky < d.kh; ++ky) {
        const int64_t iy = oy * d.sh + ky * d.dh;
        for (int kx = 0; kx < d.kw; ++kx) {
          const int64_t c = kx * d.dw;
          const int16_t* src = d.x + ((c % d.sw) * d.hp + iy) * d.wq + c / d.sw + ox;
          S16 v;
          __builtin_memcpy(&v, src, sizeof(v));
          acc += __builtin_convertvector(v, I) * d.w[ky * d.kw + kx];
        }
      }
      const int64_t off = oy * d.ow + ox;
      const size_t n = static_cast<size_t>(d.ow - ox < L ? d.ow - ox : L);
      qs8_store_row<P, 1>(&acc, n, mult, rb ? rb + off : nullptr, yb + off, p);
    }
}

}  // namespace

// int8 spatial-pack / direct convolution microkernels: the int8 twin of f32_spack.h. One
// output tile of VH x VW pixels x VC output channels in registers, vector lanes over output
// channels (the GEMM kernels' blocking transposed): per reduction group and tap, one weight
// vector per VC / lanes and each input pixel's 4-byte group broadcast and dot-accumulated
// into it with the qs8 primitive (vpdpbusd on u8 quads, vpmaddwd on s16 pairs; see
// qs8_gemm.h for the KR = 4 / 2 encodings, which are the same here):
//
//   acc[vh * VW + vw][v] = init[v] + sum_{q < kq, a < kh, b < kw}
//       dot4(x[q * cs + a * khs + b * kws + vh * rs + vw * ps], w[((q * kh + a) * kw + b) * VC +
//       v])
//
// x is a packed activation layout whose element is one 4-byte group (KR consecutive input
// channels of one pixel): spatial-pack packs a tile's receptive field, direct the whole
// padded image; strides are bytes (ps = 4 * stride_w, kws = 4 * dil_w). w is one VC block
// packed [kq][kh][kw][VC][4 bytes] (channels past K and groups past C zero).
// Then qconv.h steps 3-5 per lane (QS8GemmParams: vlo / vhi / y_zp / r_zp / rm; init and
// mult come per VC block here) into out = [VH * VW][VC] bytes, the residual (when p has
// one) read from a tile of the same layout. The caller scatters the tile into NCHW.
// The one list is qs8-spack/qs8_spack.inc; each ISA's set has its own TU, which
// instantiates one template for every (VC / lanes, VH, VW) the knobs allow.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "algo/microkernels/qs8-gemm/qs8_gemm.h"
#include "dlas/hw/isa.h"

namespace dlas::ukernel {

struct QS8SpackTile {
  size_t kq, kh, kw;
  const uint8_t* x;
  size_t cs, rs, khs, kws, ps;
  const uint8_t* w;
  const int32_t* init;      // [VC]
  const float* mult;        // [VC]
  const uint8_t* residual;  // [VH * VW][VC] of r's type, or null
  uint8_t* out;             // [VH * VW][VC] of y's type
};

using QS8SpackFn = void (*)(const QS8SpackTile& t, const QS8GemmParams& p);

// The tile shapes every kernel set instantiates (knob values).
inline constexpr int kQS8SpackVectors[] = {1, 2};  // VC = vectors * lanes
inline constexpr int kQS8SpackVh[] = {1, 2, 4};
inline constexpr int kQS8SpackVw[] = {4, 7, 8};

struct QS8SpackUkernels {
  const char* name;  // "qs8_spack_x8__avx2"
  Isa isa;
  int lanes;
  int kr;                                             // 4: u8 / s8 quads, 2: s16 pairs
  QS8SpackFn (*select)(int vectors, int vh, int vw);  // nullptr for a shape not listed
};

// Every set built, in qs8_spack.inc order.
const std::vector<QS8SpackUkernels>& qs8_spack_ukernels();
// The set of the highest listed path <= isa the CPU runs (best_for_isa; amx -> avx512-vnni).
const QS8SpackUkernels& qs8_spack_for(Isa isa);

}  // namespace dlas::ukernel

// Declarations of every int8 spatial-pack kernel set's selector, derived from qs8_spack.inc.
namespace dlas::ukernel {
#define X(name, isa, lanes, kr) QS8SpackFn name(int vectors, int vh, int vw);
#include "algo/microkernels/qs8-spack/qs8_spack.inc"
#undef X
}  // namespace dlas::ukernel

// f32 sparse spatial-pack microkernels: TVM's conv2d_spatial_pack register tile with sparse
// weights. One output tile of VH x VW pixels x VC output channels is held in registers,
// vector lanes over output channels (VC = NV vectors of L lanes). The weights of one
// block row (VC output channels) are BSR blocks of VCx1: each stored block is VC output
// channels x one tap r = (c, ky, kx), i.e. ONE weight vector load (per NV) per block,
// then every tile pixel's input value is broadcast and FMA'd into its accumulators:
//
//   out[(vh * VW + vw) * VC + v] = clamp(w[v] + sum_{blocks z} w[VC * (z + 1) + v]
//                                  * x_z[vh * row_stride + vw], min, max)
//
// where x_z = in + (byte offset sum of dmap[0..z]) is tap z's input for the tile's first
// pixel; pixels of a tile row are adjacent floats, rows row_stride BYTES apart. This is
// the layout pack_f32_spmm(m, bias, row_off) produces for a VCx1 block shape (biases,
// then [block][VC] values; one int32 byte delta per block) over sparse-direct's
// zero-padded, stride-phase-split input planes, where every tap is one constant offset.
// Blocks with zeros inside carry them (exact on any weights). With `accumulate` the sums
// start from the tile already in out (+ the biases): a reduction split into chunks, each
// packed with its own taps (biases zero after the first), the last one clamping. With
// `transpose` (the last chunk) the tile is stored channel-major instead,
// out[(v * VH + vh) * VW + vw], so each channel's rows copy straight into NCHW (8-lane
// kernels transpose in registers).
//
// One list: f32-sspack/f32_sspack.inc (kernel sets per ISA; each set instantiates every
// tile shape below). Bodies: f32-sspack/f32_sspack_template.h.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "dlas/hw/isa.h"

namespace dlas::ukernel {

using F32SspackFn = void (*)(size_t nblocks, const float* in, size_t row_stride, const float* w,
                             const int32_t* dmap, float* out, float min, float max, bool accumulate,
                             bool transpose);

// The tile shapes every kernel set instantiates (sparse-spatial-pack knob values).
inline constexpr int kSspackVectors[] = {1, 2};  // NV: VC = NV * lanes
inline constexpr int kSspackVh[] = {1, 2, 3, 4};
inline constexpr int kSspackVw[] = {2, 4, 6, 8};
inline constexpr int kSspackMaxTileFloats = 2 * 16 * 4 * 8;  // NV * lanes * VH * VW

// One ISA's kernel set: lanes per vector and the kernel of each tile shape.
struct F32SspackUkernels {
  const char* name;  // "f32_sspack_x8__avx2"
  Isa isa;
  int lanes;
  F32SspackFn (*select)(int vectors, int vh, int vw);  // nullptr for a shape not instantiated
};

// The production sets (the X rows of the list).
const std::vector<F32SspackUkernels>& f32_sspack_ukernels();
// The test-only sets (the T rows): run by the tests, never selected.
const std::vector<F32SspackUkernels>& f32_sspack_test_only_ukernels();
// The set for VC = vc output channels on `isa`: of the highest ISA <= isa that has a set
// whose lanes divide vc with vc / lanes a listed vector count, the first listed such set
// (per ISA the list puts the fastest first); nullptr when none.
const F32SspackUkernels* find_f32_sspack(Isa isa, int vc);

}  // namespace dlas::ukernel

// Declarations of every f32 sparse spatial-pack kernel set, derived from f32_sspack.inc.
namespace dlas::ukernel {
#define X(name, isa, lanes) F32SspackFn name(int vectors, int vh, int vw);
#define T(name, isa, lanes) X(name, isa, lanes)
#include "algo/microkernels/f32-sspack/f32_sspack.inc"
#undef T
#undef X
}  // namespace dlas::ukernel

// f32 spatial-pack convolution microkernels (TVM's conv2d_spatial_pack inner loop):
// one output tile of VH x VW pixels x VC output channels held in registers, vector
// lanes over output channels -- per reduction step one weight vector per VC/lanes,
// each input pixel broadcast and FMA'd into it. (GEMM kernels instead vectorise
// over pixels; here the register blocking is transposed.)
//
//   out[(vh * VW + vw) * VC + v] = sum_{ci < kc, a < kh, b < kw}
//       x[ci * cs + a * khs + b * kws + vh * rs + vw] * w[((ci * kh + a) * kw + b) * VC + v]
//
// x is one packed input tile, ci-major with rows that carry the halo; pixels of a row are
// adjacent (unit column step, so every column offset is a constant). The caller packs
// either the raw halo columns (stride_w 1: kws = dil_w) or, for stride_w > 1, the
// stride-resolved columns per kernel column (kws = VW). w is one VC block of weights
// packed [ci][kh][kw][VC].
// The one list is f32-spack/f32_spack.inc; each ISA's kernels have their own TU,
// which instantiates one template for every (VC / lanes, VH, VW) the knobs allow.
#pragma once

#include <cstddef>
#include <vector>

#include "dlas/hw/isa.h"

namespace dlas::ukernel {

using F32SpackFn = void (*)(size_t kc, size_t kh, size_t kw, const float* x, size_t cs, size_t rs,
                            size_t khs, size_t kws, const float* w, float* out);

// The tile shapes every kernel set instantiates (spatial-pack knob values).
inline constexpr int kSpackVectors[] = {1, 2};  // VC = vectors * lanes
inline constexpr int kSpackVh[] = {1, 2, 4};
inline constexpr int kSpackVw[] = {4, 6, 8};

// One ISA's kernel set: lanes per vector and the kernel of each tile shape.
struct F32SpackUkernels {
  const char* name;  // "f32_spack_x8__avx2"
  Isa isa;
  int lanes;
  F32SpackFn (*select)(int vectors, int vh, int vw);  // nullptr for a shape not listed
};

// The production sets (the X rows of the list).
const std::vector<F32SpackUkernels>& f32_spack_ukernels();
// The test-only sets (the T rows): run by the tests, never selected.
const std::vector<F32SpackUkernels>& f32_spack_test_only_ukernels();
// The first listed set of the highest ISA <= isa.
const F32SpackUkernels& f32_spack_default(Isa isa);

}  // namespace dlas::ukernel

// Declarations of every f32 spatial-pack kernel set, derived from f32_spack.inc.
namespace dlas::ukernel {
#define X(name, isa, lanes) F32SpackFn name(int vectors, int vh, int vw);
#define T(name, isa, lanes) X(name, isa, lanes)
#include "algo/microkernels/f32-spack/f32_spack.inc"
#undef T
#undef X
}  // namespace dlas::ukernel

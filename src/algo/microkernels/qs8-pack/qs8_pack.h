// int8 activation packing kernels: the byte shuffles of the int8 convs' input packing
// (gemm's im2col panels, spatial-pack's tiles, direct's blocked image), per ISA. Written
// once over 16-byte GCC vectors (qs8-pack/qs8_pack_template.h): in the baseline (SSE2) TU GCC
// lowers most byte shuffles element by element; in the AVX2 TU they become vpshufb /
// vpunpck. The AVX-512 set widens bytes to lanes and masks its tails
// (qs8_pack__avx512.cc): the AMX implicit GEMMs interleave rows of 7 and 14 pixels, where
// the 16-byte kernels spent most of their time in the scalar tail.
//
//   quads(r, n, flip, dst):  dst[4j + e] = r[e][j] ^ flip              (e < 4, j < n)
//   pairs(r, n, flip, dst):  16-bit dst[2j + e] = (uint16)(r[e][j] ^ flip)  (e < 2)
//   copy(src, stride, n, flip, dst):  dst[j] = src[j * stride] ^ flip
// flip is 0x80 for s8 activations (stored as u8, qconv_common.h) and 0 for u8.
// The one list is qs8-pack/qs8_pack.inc.
#pragma once

#include <cstddef>
#include <cstdint>

#include "dlas/hw/isa.h"

namespace dlas::ukernel {

using QS8InterleaveFn = void (*)(const uint8_t* const* rows, size_t n, uint8_t flip, uint8_t* dst);
using QS8CopyFn = void (*)(const uint8_t* src, size_t stride, size_t n, uint8_t flip, uint8_t* dst);

struct QS8PackUkernels {
  const char* name;  // "qs8_pack__avx2"
  Isa isa;
  QS8InterleaveFn quads, pairs;
  QS8CopyFn copy;
};

// The set of the highest listed path <= isa the CPU runs (best_for_isa).
const QS8PackUkernels& qs8_pack_for(Isa isa);
// Every set built, in qs8_pack.inc order.
const QS8PackUkernels* qs8_pack_all(size_t* count);

}  // namespace dlas::ukernel

// Declarations of every int8 packing kernel set, derived from qs8_pack.inc.
namespace dlas::ukernel {
#define X(name, isa)                                                                \
  void name##_quads(const uint8_t* const* r, size_t n, uint8_t flip, uint8_t* dst); \
  void name##_pairs(const uint8_t* const* r, size_t n, uint8_t flip, uint8_t* dst); \
  void name##_copy(const uint8_t* src, size_t stride, size_t n, uint8_t flip, uint8_t* dst);
#include "algo/microkernels/qs8-pack/qs8_pack.inc"
#undef X
}  // namespace dlas::ukernel

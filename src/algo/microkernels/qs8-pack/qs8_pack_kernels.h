// Declarations of every int8 packing kernel set, derived from qs8_pack.inc.
#pragma once

#include "algo/microkernels/qs8-pack/qs8_pack.h"

namespace dlas::ukernel {
#define X(name, isa)                                                                \
  void name##_quads(const uint8_t* const* r, size_t n, uint8_t flip, uint8_t* dst); \
  void name##_pairs(const uint8_t* const* r, size_t n, uint8_t flip, uint8_t* dst); \
  void name##_copy(const uint8_t* src, size_t stride, size_t n, uint8_t flip, uint8_t* dst);
#include "algo/microkernels/qs8-pack/qs8_pack.inc"
#undef X
}  // namespace dlas::ukernel

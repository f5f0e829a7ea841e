// Declarations of every int8 depthwise kernel, derived from qs8_dwconv.inc.
#pragma once

#include "algo/microkernels/qs8-dwconv/qs8_dwconv.h"

namespace dlas::ukernel {
#define X(fn, isa, lanes)                                                               \
  void fn(const QS8DwPlane& d, int32_t bias, float mult, const void* residual, void* y, \
          const QS8GemmParams& p);
#include "algo/microkernels/qs8-dwconv/qs8_dwconv.inc"
#undef X
}  // namespace dlas::ukernel

// Declarations of every f32 sparse spatial-pack kernel set, derived from f32_sspack.inc.
#pragma once

#include "algo/microkernels/f32-sspack/f32_sspack.h"

namespace dlas::ukernel {
#define X(name, isa, lanes) F32SspackFn name(int vectors, int vh, int vw);
#define T(name, isa, lanes) X(name, isa, lanes)
#include "algo/microkernels/f32-sspack/f32_sspack.inc"
#undef T
#undef X
}  // namespace dlas::ukernel

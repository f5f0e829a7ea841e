// Declarations of every f32 sparse spatial-pack kernel set, derived from f32_sspack.inc.
#pragma once

#include "algo/microkernels/f32_sspack.h"

namespace dlas::ukernel {
#define X(name, isa, lanes) F32SspackFn name(int vectors, int vh, int vw);
#include "algo/microkernels/f32-sspack/f32_sspack.inc"
#undef X
}  // namespace dlas::ukernel

// Declarations of every f32 spatial-pack kernel set, derived from f32_spack.inc.
#pragma once

#include "algo/microkernels/f32-spack/f32_spack.h"

namespace dlas::ukernel {
#define X(name, isa, lanes) F32SpackFn name(int vectors, int vh, int vw);
#define T(name, isa, lanes) X(name, isa, lanes)
#include "algo/microkernels/f32-spack/f32_spack.inc"
#undef T
#undef X
}  // namespace dlas::ukernel

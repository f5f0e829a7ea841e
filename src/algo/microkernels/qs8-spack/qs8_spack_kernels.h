// Declarations of every int8 spatial-pack kernel set's selector, derived from qs8_spack.inc.
#pragma once

#include "algo/microkernels/qs8-spack/qs8_spack.h"

namespace dlas::ukernel {
#define X(name, isa, lanes, kr) QS8SpackFn name(int vectors, int vh, int vw);
#include "algo/microkernels/qs8-spack/qs8_spack.inc"
#undef X
}  // namespace dlas::ukernel

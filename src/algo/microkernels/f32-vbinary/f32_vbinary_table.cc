// The f32 binary kernel dispatch, derived from f32_vbinary.inc.
#include "algo/microkernels/f32-vbinary/f32_vbinary.h"
#include "algo/microkernels/isa_dispatch.h"

namespace dlas::ukernel {

const F32VBinaryKernels& f32_vbinary_for(Isa isa) {
  static const IsaEntry<const F32VBinaryKernels*> kList[] = {
#define X(name, level) {&name, Isa::level},
#include "algo/microkernels/f32-vbinary/f32_vbinary.inc"
#undef X
  };
  return *best_for_isa(kList, isa, "f32 binary");
}

}  // namespace dlas::ukernel

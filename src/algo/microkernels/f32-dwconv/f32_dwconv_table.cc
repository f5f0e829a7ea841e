#include "algo/microkernels/f32-dwconv/f32_dwconv.h"
#include "algo/microkernels/isa_dispatch.h"

namespace dlas::ukernel {

const F32DwconvKernels& f32_dwconv_for(Isa isa) {
  static const IsaEntry<const F32DwconvKernels*> kList[] = {
#define X(name, level, lanes) {&name, Isa::level},
#define T(name, level, lanes)
#include "algo/microkernels/f32-dwconv/f32_dwconv.inc"
#undef T
#undef X
  };
  return *best_for_isa(kList, isa, "f32 depthwise");
}

}  // namespace dlas::ukernel

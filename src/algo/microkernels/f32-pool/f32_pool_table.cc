// The f32 pooling kernel dispatch, derived from f32_pool.inc.
#include "algo/microkernels/f32-pool/f32_pool.h"
#include "algo/microkernels/isa_dispatch.h"

namespace dlas::ukernel {

const F32PoolKernels& f32_pool_for(Isa isa) {
  static const IsaEntry<const F32PoolKernels*> kList[] = {
#define X(name, level) {&name, Isa::level},
#include "algo/microkernels/f32-pool/f32_pool.inc"
#undef X
  };
  return *best_for_isa(kList, isa, "f32 pooling");
}

}  // namespace dlas::ukernel

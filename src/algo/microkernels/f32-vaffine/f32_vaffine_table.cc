#include "algo/microkernels/f32-vaffine/f32_vaffine.h"
#include "algo/microkernels/isa_dispatch.h"

namespace dlas::ukernel {

F32VAffineFn f32_vaffine_for(Isa isa) {
  static const IsaEntry<F32VAffineFn> kList[] = {
#define X(fn, level) {&fn, Isa::level},
#include "algo/microkernels/f32-vaffine/f32_vaffine.inc"
#undef X
  };
  static const F32VAffineFn table[] = {best_for_isa(kList, Isa::kScalar, "f32 affine"),
                                       best_for_isa(kList, Isa::kAvx2, "f32 affine"),
                                       best_for_isa(kList, Isa::kAvx512, "f32 affine")};
  const Isa base = base_isa(isa);
  return table[base == Isa::kAvx512 ? 2 : base == Isa::kAvx2 ? 1 : 0];
}

}  // namespace dlas::ukernel

namespace dlas {

void channel_affine(Isa isa, Activation act, float p0, float p1, size_t pixels, size_t lanes,
                    const float* x, const float* scale, const float* shift, float* y) {
  ukernel::f32_vaffine_for(isa)(pixels, lanes, x, scale, shift, y, act, p0, p1);
}

}  // namespace dlas

#include "algo/microkernels/f32-vepilogue/f32_vepilogue.h"
#include "algo/microkernels/isa_dispatch.h"

namespace dlas::ukernel {

F32VEpilogueFn f32_vepilogue_for(Isa isa) {
  static const IsaEntry<F32VEpilogueFn> kList[] = {
#define X(fn, level) {&fn, Isa::level},
#include "algo/microkernels/f32-vepilogue/f32_vepilogue.inc"
#undef X
  };
  static const F32VEpilogueFn table[] = {best_for_isa(kList, Isa::kScalar, "f32 epilogue"),
                                         best_for_isa(kList, Isa::kAvx2, "f32 epilogue"),
                                         best_for_isa(kList, Isa::kAvx512, "f32 epilogue")};
  const Isa base = base_isa(isa);
  return table[base == Isa::kAvx512 ? 2 : base == Isa::kAvx2 ? 1 : 0];
}

}  // namespace dlas::ukernel

namespace dlas {

void apply_epilogue(Isa isa, const Epilogue& e, size_t n, float* y, float bias,
                    const float* residual) {
  if (e.act == Activation::kNone && bias == 0.f && !residual) return;
  ukernel::f32_vepilogue_for(isa)(n, y, bias, residual, e.act, e.p0, e.p1);
}

}  // namespace dlas

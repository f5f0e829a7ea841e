#include "algo/microkernels/f32_vepilogue.h"

namespace dlas::ukernel {

namespace {
F32VEpilogueFn find_best(Isa isa) {
  F32VEpilogueFn best = nullptr;
  int best_level = -1;
#define X(fn, level)                                                          \
  if (static_cast<int>(Isa::level) <= static_cast<int>(isa) &&                \
      static_cast<int>(Isa::level) > best_level) {                            \
    best = &fn;                                                               \
    best_level = static_cast<int>(Isa::level);                                \
  }
#include "algo/microkernels/f32-vepilogue/f32_vepilogue.inc"
#undef X
  return best;
}
}  // namespace

F32VEpilogueFn f32_vepilogue_for(Isa isa) {
  static const F32VEpilogueFn table[] = {find_best(Isa::kScalar), find_best(Isa::kAvx2),
                                         find_best(Isa::kAvx512)};
  return table[static_cast<int>(isa)];
}

}  // namespace dlas::ukernel

namespace dlas {

void apply_epilogue(Isa isa, const Epilogue& e, size_t n, float* y, float bias,
                    const float* residual) {
  if (e.act == Activation::kNone && bias == 0.f && !residual) return;
  ukernel::f32_vepilogue_for(isa)(n, y, bias, residual, e.act, e.p0, e.p1);
}

}  // namespace dlas

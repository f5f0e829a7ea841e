#include "algo/microkernels/f32_dwconv.h"

namespace dlas::ukernel {

const F32DwconvKernels& f32_dwconv_for(Isa isa) {
  const F32DwconvKernels* best = nullptr;
  int best_level = -1;
#define X(name, level, lanes)                                  \
  if (static_cast<int>(Isa::level) <= static_cast<int>(isa) && \
      static_cast<int>(Isa::level) > best_level) {             \
    best = &name;                                              \
    best_level = static_cast<int>(Isa::level);                 \
  }
#define T(name, level, lanes)
#include "algo/microkernels/f32-dwconv/f32_dwconv.inc"
#undef T
#undef X
  return *best;
}

}  // namespace dlas::ukernel

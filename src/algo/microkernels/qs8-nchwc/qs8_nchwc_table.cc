// The int8 blocked direct kernel sets, derived from qs8_nchwc.inc.
#include <vector>

#include "algo/microkernels/qs8-nchwc/qs8_nchwc.h"
#include "dlas/algo/layout.h"

namespace dlas::ukernel {

const QS8NchwcUkernels* qs8_nchwc_for(Isa isa) {
  static const std::vector<QS8NchwcUkernels> sets = {
#define X(name, isa, lanes, kr, acc, regs) {#name, Isa::isa, lanes, kr, acc, regs, &name},
#include "algo/microkernels/qs8-nchwc/qs8_nchwc.inc"
#undef X
  };
  const int block = layout_block(native_blocked_layout(isa));
  for (const QS8NchwcUkernels& s : sets)
    if (isa >= s.isa && isa_supported(s.isa)) return s.lanes == block ? &s : nullptr;
  return nullptr;
}

}  // namespace dlas::ukernel

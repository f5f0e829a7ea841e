// The int8 Winograd kernel sets, derived from qs8_wino.inc.
#include <vector>

#include "algo/microkernels/qs8-wino/qs8_wino.h"

namespace dlas::ukernel {

const QS8WinoUkernels* qs8_wino_for(Isa isa, int lanes) {
  static const std::vector<QS8WinoUkernels> sets = {
#define X(name, isa, lanes, gemm, acc, regs) \
  {#name, Isa::isa, lanes, &name##_input, &name##_output, &gemm, acc, regs},
#include "algo/microkernels/qs8-wino/qs8_wino.inc"
#undef X
  };
  for (const QS8WinoUkernels& s : sets)
    if (s.lanes == lanes && isa >= s.isa && isa_supported(s.isa)) return &s;
  return nullptr;
}

}  // namespace dlas::ukernel

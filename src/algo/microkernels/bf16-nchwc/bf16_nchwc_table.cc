// The bf16 blocked direct kernel sets, derived from bf16_nchwc.inc.
#include "algo/microkernels/bf16-nchwc/bf16_nchwc.h"

namespace dlas::ukernel {

const Bf16NchwcUkernels* bf16_nchwc_for(Isa isa) {
  static const std::vector<Bf16NchwcUkernels> sets = {
#define X(name, isa, acc, regs) {#name, Isa::isa, acc, regs, &name},
#include "algo/microkernels/bf16-nchwc/bf16_nchwc.inc"
#undef X
  };
  for (const Bf16NchwcUkernels& s : sets)
    if (isa >= s.isa && isa_supported(s.isa)) return &s;
  return nullptr;
}

}  // namespace dlas::ukernel

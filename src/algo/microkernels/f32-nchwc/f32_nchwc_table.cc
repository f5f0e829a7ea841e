// The f32 blocked-layout direct kernel table, derived from f32_nchwc.inc.
#include "algo/microkernels/f32-nchwc/f32_nchwc.h"
#include "algo/microkernels/isa_dispatch.h"

namespace dlas::ukernel {

namespace {
const ListRows<F32NchwcUkernels>& rows() {
  static const ListRows<F32NchwcUkernels> r = {
#define X(name, isa, lanes, acc, regs, dacc, l2) \
  {false, {#name, Isa::isa, lanes, acc, regs, dacc, l2, &name}},
#define T(name, isa, lanes, acc, regs, dacc, l2) \
  {true, {#name, Isa::isa, lanes, acc, regs, dacc, l2, &name}},
#include "algo/microkernels/f32-nchwc/f32_nchwc.inc"
#undef T
#undef X
  };
  return r;
}
}  // namespace

const std::vector<F32NchwcUkernels>& f32_nchwc_ukernels() { return rows().production; }
const std::vector<F32NchwcUkernels>& f32_nchwc_test_only_ukernels() { return rows().test_only; }

const F32NchwcUkernels* f32_nchwc_for(Isa isa, int lanes) {
  for (const F32NchwcUkernels& u : f32_nchwc_ukernels())
    if (u.lanes == lanes && u.isa <= base_isa(isa)) return &u;
  return nullptr;
}

}  // namespace dlas::ukernel

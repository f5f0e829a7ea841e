// The f32 blocked-layout depthwise kernel table, derived from f32_dwnchwc.inc.
#include "algo/microkernels/f32-dwnchwc/f32_dwnchwc.h"
#include "algo/microkernels/isa_dispatch.h"

namespace dlas::ukernel {

namespace {
const ListRows<F32DwNchwcUkernels>& rows() {
  static const ListRows<F32DwNchwcUkernels> r = {
#define X(name, isa, lanes, acc) {false, {#name, Isa::isa, lanes, acc, &name}},
#define T(name, isa, lanes, acc) {true, {#name, Isa::isa, lanes, acc, &name}},
#include "algo/microkernels/f32-dwnchwc/f32_dwnchwc.inc"
#undef T
#undef X
  };
  return r;
}
}  // namespace

const std::vector<F32DwNchwcUkernels>& f32_dwnchwc_ukernels() { return rows().production; }
const std::vector<F32DwNchwcUkernels>& f32_dwnchwc_test_only_ukernels() { return rows().test_only; }

const F32DwNchwcUkernels* f32_dwnchwc_for(Isa isa, int lanes) {
  for (const F32DwNchwcUkernels& u : f32_dwnchwc_ukernels())
    if (u.lanes == lanes && u.isa <= base_isa(isa)) return &u;
  return nullptr;
}

}  // namespace dlas::ukernel

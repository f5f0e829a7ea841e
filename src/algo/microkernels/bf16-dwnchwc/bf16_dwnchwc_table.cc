// The bf16 blocked-layout depthwise kernel table, derived from bf16_dwnchwc.inc.
#include "algo/microkernels/bf16-dwnchwc/bf16_dwnchwc.h"
#include "algo/microkernels/isa_dispatch.h"

namespace dlas::ukernel {

namespace {
const ListRows<Bf16DwNchwcUkernels>& rows() {
  static const ListRows<Bf16DwNchwcUkernels> r = {
#define X(name, isa, lanes, acc) {false, {#name, Isa::isa, lanes, acc, &name, &name##_f32_out}},
#define T(name, isa, lanes, acc) {true, {#name, Isa::isa, lanes, acc, &name, &name##_f32_out}},
#include "algo/microkernels/bf16-dwnchwc/bf16_dwnchwc.inc"
#undef T
#undef X
  };
  return r;
}
}  // namespace

const std::vector<Bf16DwNchwcUkernels>& bf16_dwnchwc_ukernels() { return rows().production; }
const std::vector<Bf16DwNchwcUkernels>& bf16_dwnchwc_test_only_ukernels() {
  return rows().test_only;
}

const Bf16DwNchwcUkernels* bf16_dwnchwc_for(Isa isa) {
  for (const Bf16DwNchwcUkernels& u : bf16_dwnchwc_ukernels())
    if (u.isa <= base_isa(isa)) return &u;
  return nullptr;
}

}  // namespace dlas::ukernel

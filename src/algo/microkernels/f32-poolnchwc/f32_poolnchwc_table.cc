// The f32 blocked-layout pooling kernel table, derived from f32_poolnchwc.inc.
#include "algo/microkernels/f32-poolnchwc/f32_poolnchwc.h"
#include "algo/microkernels/isa_dispatch.h"

namespace dlas::ukernel {

namespace {
const ListRows<F32PoolNchwcUkernels>& rows() {
  static const ListRows<F32PoolNchwcUkernels> r = {
#define X(name, isa, lanes) {false, name},
#define T(name, isa, lanes) {true, name},
#include "algo/microkernels/f32-poolnchwc/f32_poolnchwc.inc"
#undef T
#undef X
  };
  return r;
}
}  // namespace

const std::vector<F32PoolNchwcUkernels>& f32_poolnchwc_ukernels() { return rows().production; }
const std::vector<F32PoolNchwcUkernels>& f32_poolnchwc_test_only_ukernels() {
  return rows().test_only;
}

const F32PoolNchwcUkernels* f32_poolnchwc_for(Isa isa, int lanes) {
  for (const F32PoolNchwcUkernels& u : f32_poolnchwc_ukernels())
    if (u.lanes == lanes && u.isa <= base_isa(isa)) return &u;
  return nullptr;
}

}  // namespace dlas::ukernel

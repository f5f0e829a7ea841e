// The f32 sparse spatial-pack kernel table, derived from f32_sspack.inc.
#include "algo/microkernels/f32-sspack/f32_sspack.h"
#include "algo/microkernels/isa_dispatch.h"

namespace dlas::ukernel {

namespace {
const ListRows<F32SspackUkernels>& rows() {
  static const ListRows<F32SspackUkernels> r = {
#define X(name, isa, lanes) {false, {#name, Isa::isa, lanes, &name}},
#define T(name, isa, lanes) {true, {#name, Isa::isa, lanes, &name}},
#include "algo/microkernels/f32-sspack/f32_sspack.inc"
#undef T
#undef X
  };
  return r;
}
}  // namespace

const std::vector<F32SspackUkernels>& f32_sspack_ukernels() { return rows().production; }
const std::vector<F32SspackUkernels>& f32_sspack_test_only_ukernels() { return rows().test_only; }

const F32SspackUkernels* find_f32_sspack(Isa isa, int vc) {
  for (int level = static_cast<int>(isa); level >= 0; --level)
    for (const F32SspackUkernels& u : f32_sspack_ukernels()) {
      if (static_cast<int>(u.isa) != level || vc % u.lanes != 0) continue;
      for (int nv : kSspackVectors)
        if (nv * u.lanes == vc) return &u;
    }
  return nullptr;
}

}  // namespace dlas::ukernel

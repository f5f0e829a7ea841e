// The f32 sparse spatial-pack kernel table, derived from f32_sspack.inc.
#include "algo/microkernels/f32-sspack/f32_sspack_kernels.h"

namespace dlas::ukernel {

const std::vector<F32SspackUkernels>& f32_sspack_ukernels() {
  static const std::vector<F32SspackUkernels> table = {
#define X(name, isa, lanes) {#name, Isa::isa, lanes, &name},
#define T(name, isa, lanes)
#include "algo/microkernels/f32-sspack/f32_sspack.inc"
#undef T
#undef X
  };
  return table;
}

const std::vector<F32SspackUkernels>& f32_sspack_test_only_ukernels() {
  static const std::vector<F32SspackUkernels> table = {
#define X(name, isa, lanes)
#define T(name, isa, lanes) {#name, Isa::isa, lanes, &name},
#include "algo/microkernels/f32-sspack/f32_sspack.inc"
#undef T
#undef X
  };
  return table;
}

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

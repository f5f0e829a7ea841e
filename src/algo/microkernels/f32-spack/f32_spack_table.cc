// The f32 spatial-pack kernel table, derived from f32_spack.inc.
#include "algo/microkernels/f32-spack/f32_spack.h"
#include "algo/microkernels/isa_dispatch.h"
#include "dlas/core/error.h"

namespace dlas::ukernel {

namespace {
const ListRows<F32SpackUkernels>& rows() {
  static const ListRows<F32SpackUkernels> r = {
#define X(name, isa, lanes) {false, {#name, Isa::isa, lanes, &name}},
#define T(name, isa, lanes) {true, {#name, Isa::isa, lanes, &name}},
#include "algo/microkernels/f32-spack/f32_spack.inc"
#undef T
#undef X
  };
  return r;
}
}  // namespace

const std::vector<F32SpackUkernels>& f32_spack_ukernels() { return rows().production; }
const std::vector<F32SpackUkernels>& f32_spack_test_only_ukernels() { return rows().test_only; }

const F32SpackUkernels& f32_spack_default(Isa isa) {
  for (int level = static_cast<int>(isa); level >= 0; --level)
    for (const F32SpackUkernels& u : f32_spack_ukernels())
      if (static_cast<int>(u.isa) == level) return u;
  fail(ErrorKind::kInternal, "no f32 spatial-pack kernel for ", isa_name(isa));
}

}  // namespace dlas::ukernel

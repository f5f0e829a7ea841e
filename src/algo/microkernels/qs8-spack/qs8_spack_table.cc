// The int8 spatial-pack kernel table, derived from qs8_spack.inc.
#include "algo/microkernels/isa_dispatch.h"
#include "algo/microkernels/qs8-spack/qs8_spack.h"

namespace dlas::ukernel {

const std::vector<QS8SpackUkernels>& qs8_spack_ukernels() {
  static const std::vector<QS8SpackUkernels> table = {
#define X(name, isa, lanes, kr) {#name, Isa::isa, lanes, kr, &name},
#include "algo/microkernels/qs8-spack/qs8_spack.inc"
#undef X
  };
  return table;
}

const QS8SpackUkernels& qs8_spack_for(Isa isa) {
  const auto& all = qs8_spack_ukernels();
  const QS8SpackUkernels* best = nullptr;
  for (const QS8SpackUkernels& s : all)
    if (s.isa <= isa && (s.isa == base_isa(s.isa) || isa_supported(s.isa)) &&
        (!best || s.isa > best->isa))
      best = &s;
  DLAS_CHECK(best != nullptr, ErrorKind::kInternal, "no qs8 spack kernels for ", isa_name(isa));
  return *best;
}

}  // namespace dlas::ukernel

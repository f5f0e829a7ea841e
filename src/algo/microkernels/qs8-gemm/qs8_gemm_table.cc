// The int8 GEMM microkernel table, derived from qs8_gemm.inc.
#include <cstring>

#include "algo/microkernels/qs8-gemm/qs8_gemm.h"

namespace dlas::ukernel {

const std::vector<QS8GemmUkernel>& qs8_gemm_ukernels() {
  static const std::vector<QS8GemmUkernel> table = {
#define X(fn, isa, mr, nr, kr, kb) {#fn, Isa::isa, mr, nr, kr, kb, &fn, &qs8_gemm_pack_a<kr, kb>},
#include "algo/microkernels/qs8-gemm/qs8_gemm.inc"
#undef X
  };
  return table;
}

std::vector<const QS8GemmUkernel*> qs8_gemm_ukernels_for(Isa isa) {
  std::vector<const QS8GemmUkernel*> out;
  for (int level = static_cast<int>(isa); level >= 0; --level) {
    const Isa l = static_cast<Isa>(level);
    if (l != base_isa(l) && !isa_supported(l)) continue;
    for (const QS8GemmUkernel& u : qs8_gemm_ukernels())
      if (u.isa == l) out.push_back(&u);
  }
  return out;
}

const QS8GemmUkernel* find_qs8_gemm(const char* name) {
  for (const QS8GemmUkernel& u : qs8_gemm_ukernels())
    if (std::strcmp(u.name, name) == 0) return &u;
  return nullptr;
}

}  // namespace dlas::ukernel

// The int8 fully-connected microkernel table, derived from qs8_fc.inc.
#include <cstring>

#include "algo/microkernels/qs8-fc/qs8_fc.h"

namespace dlas::ukernel {

const std::vector<QS8FcUkernel>& qs8_fc_ukernels() {
  static const std::vector<QS8FcUkernel> table = {
#define X(fn, isa, mr, nr, kr) {#fn, Isa::isa, mr, nr, kr, &fn},
#include "algo/microkernels/qs8-fc/qs8_fc.inc"
#undef X
  };
  return table;
}

std::vector<const QS8FcUkernel*> qs8_fc_ukernels_for(Isa isa) {
  std::vector<const QS8FcUkernel*> out;
  for (int level = static_cast<int>(isa); level >= 0; --level) {
    const Isa l = static_cast<Isa>(level);
    if (l != base_isa(l) && !isa_supported(l)) continue;
    for (const QS8FcUkernel& u : qs8_fc_ukernels())
      if (u.isa == l) out.push_back(&u);
  }
  return out;
}

const QS8FcUkernel* find_qs8_fc(const char* name) {
  for (const QS8FcUkernel& u : qs8_fc_ukernels())
    if (std::strcmp(u.name, name) == 0) return &u;
  return nullptr;
}

}  // namespace dlas::ukernel

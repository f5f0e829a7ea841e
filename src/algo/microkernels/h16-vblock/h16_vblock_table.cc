// The 16-bit channel-block conversion table, derived from h16_vblock.inc.
#include "algo/microkernels/h16-vblock/h16_vblock.h"
#include "algo/microkernels/isa_dispatch.h"

namespace dlas::ukernel {

const std::vector<H16Vblock>& h16_vblock_kernels() {
  static const std::vector<H16Vblock> table = {
#define X(prefix, type, isa) {#prefix, DType::type, Isa::isa, &prefix##_widen, &prefix##_narrow},
#include "algo/microkernels/h16-vblock/h16_vblock.inc"
#undef X
  };
  return table;
}

const H16Vblock& h16_vblock_for(DType type, Isa isa) {
  const H16Vblock* best = nullptr;
  for (const H16Vblock& k : h16_vblock_kernels())
    if (k.type == type && k.isa <= isa && isa_supported(k.isa) && (!best || k.isa > best->isa))
      best = &k;
  DLAS_CHECK(best != nullptr, ErrorKind::kInternal, "no ", dtype_name(type),
             " channel-block conversion kernel for ", isa_name(isa));
  return *best;
}

}  // namespace dlas::ukernel

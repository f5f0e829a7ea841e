// The fp16 -> bf16 hi/lo split table, derived from f16_bfsplit.inc.
#include "algo/microkernels/f16-bfsplit/f16_bfsplit.h"
#include "algo/microkernels/isa_dispatch.h"

namespace dlas::ukernel {

const std::vector<F16Split>& f16_bfsplit_kernels() {
  static const std::vector<F16Split> table = {
#define X(prefix, isa) {#prefix, Isa::isa, &prefix##_hilo, &prefix##_hipair},
#include "algo/microkernels/f16-bfsplit/f16_bfsplit.inc"
#undef X
  };
  return table;
}

const F16Split& f16_bfsplit_for(Isa isa) {
  const F16Split* best = nullptr;
  for (const F16Split& k : f16_bfsplit_kernels())
    if (k.isa <= isa && isa_supported(k.isa) && (!best || k.isa > best->isa)) best = &k;
  DLAS_CHECK(best != nullptr, ErrorKind::kInternal, "no fp16 split kernel for ", isa_name(isa));
  return *best;
}

}  // namespace dlas::ukernel

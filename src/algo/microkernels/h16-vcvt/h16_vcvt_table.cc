// The 16-bit row conversion table, derived from h16_vcvt.inc.
#include "algo/microkernels/h16-vcvt/h16_vcvt.h"
#include "algo/microkernels/isa_dispatch.h"

namespace dlas::ukernel {

const std::vector<H16Vcvt>& h16_vcvt_kernels() {
  static const std::vector<H16Vcvt> table = {
#define X(prefix, type, isa) {#prefix, DType::type, Isa::isa, &prefix##_widen, &prefix##_narrow},
#include "algo/microkernels/h16-vcvt/h16_vcvt.inc"
#undef X
  };
  return table;
}

const H16Vcvt& h16_vcvt_for(DType type, Isa isa) {
  const H16Vcvt* best = nullptr;
  for (const H16Vcvt& k : h16_vcvt_kernels())
    if (k.type == type && k.isa <= isa && isa_supported(k.isa) && (!best || k.isa > best->isa))
      best = &k;
  DLAS_CHECK(best != nullptr, ErrorKind::kInternal, "no ", dtype_name(type),
             " conversion kernel for ", isa_name(isa));
  return *best;
}

}  // namespace dlas::ukernel

// The 8-bit (de)quantization table, derived from qs8_vcvt.inc.
#include "algo/microkernels/isa_dispatch.h"
#include "algo/microkernels/qs8-vcvt/qs8_vcvt.h"

namespace dlas::ukernel {

const std::vector<QS8Vcvt>& qs8_vcvt_kernels() {
  static const std::vector<QS8Vcvt> table = {
#define X(prefix, isa) {#prefix, Isa::isa, &prefix##_quantize, &prefix##_dequantize},
#include "algo/microkernels/qs8-vcvt/qs8_vcvt.inc"
#undef X
  };
  return table;
}

const QS8Vcvt& qs8_vcvt_for(Isa isa) {
  const QS8Vcvt* best = nullptr;
  for (const QS8Vcvt& k : qs8_vcvt_kernels())
    if (k.isa <= isa && isa_supported(k.isa) && (!best || k.isa > best->isa)) best = &k;
  DLAS_CHECK(best != nullptr, ErrorKind::kInternal, "no 8-bit quantization kernel for ",
             isa_name(isa));
  return *best;
}

}  // namespace dlas::ukernel

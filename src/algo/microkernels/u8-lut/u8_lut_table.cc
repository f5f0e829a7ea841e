// The byte table lookup dispatch, derived from u8_lut.inc.
#include "algo/microkernels/isa_dispatch.h"
#include "algo/microkernels/u8-lut/u8_lut.h"
#include "dlas/hw/cpu.h"

namespace dlas::ukernel {

const U8Lut& u8_lut_for(Isa isa) {
  static const bool vbmi = cpu_info().features.avx512vbmi && cpu_info().features.avx512bw;
  static const U8Lut kRows[] = {
#define X(name, isa, bytes, vbmi_bytes, floats) \
  {#name, Isa::isa, vbmi ? &vbmi_bytes : &bytes, &floats},
#include "algo/microkernels/u8-lut/u8_lut.inc"
#undef X
  };
  enum : int {
#define X(name, isa, bytes, vbmi_bytes, floats) k_##name,
#include "algo/microkernels/u8-lut/u8_lut.inc"
#undef X
  };
  static constexpr IsaEntry<int> kList[] = {
#define X(name, isa, bytes, vbmi_bytes, floats) {k_##name, Isa::isa},
#include "algo/microkernels/u8-lut/u8_lut.inc"
#undef X
  };
  return kRows[best_for_isa(kList, isa, "u8 lut")];
}

}  // namespace dlas::ukernel

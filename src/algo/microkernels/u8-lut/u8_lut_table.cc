// The byte table lookup dispatch, derived from u8_lut.inc.
#include "algo/microkernels/isa_dispatch.h"
#include "algo/microkernels/u8-lut/u8_lut.h"

namespace dlas::ukernel {

U8LutFn u8_lut_for(Isa isa) {
  static constexpr IsaEntry<U8LutFn> kList[] = {
#define X(fn, isa) {&fn, Isa::isa},
#include "algo/microkernels/u8-lut/u8_lut.inc"
#undef X
  };
  return best_for_isa(kList, isa, "u8 lut");
}

}  // namespace dlas::ukernel

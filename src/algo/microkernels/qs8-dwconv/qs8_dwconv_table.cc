// The int8 depthwise kernel dispatch, derived from qs8_dwconv.inc.
#include "algo/microkernels/isa_dispatch.h"
#include "algo/microkernels/qs8-dwconv/qs8_dwconv.h"

namespace dlas::ukernel {

QS8DwFn qs8_dwconv_for(Isa isa) {
  static constexpr IsaEntry<QS8DwFn> kList[] = {
#define X(fn, isa, lanes) {&fn, Isa::isa},
#include "algo/microkernels/qs8-dwconv/qs8_dwconv.inc"
#undef X
  };
  return best_for_isa(kList, isa, "qs8 dwconv");
}

}  // namespace dlas::ukernel

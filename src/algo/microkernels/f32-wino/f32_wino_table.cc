// The f32 Winograd transform kernel table, derived from f32_wino.inc.
#include "algo/microkernels/f32-wino/f32_wino_kernels.h"
#include "dlas/core/error.h"

namespace dlas::ukernel {

#define DLAS_F32_WINO_ROW(name, isa, lanes) \
  {#name,                                   \
   Isa::isa,                                \
   lanes,                                   \
   &name##_input_f2,                        \
   &name##_input_f4,                        \
   &name##_output_f2,                       \
   &name##_output_f4},

const std::vector<F32WinoUkernel>& f32_wino_ukernels() {
  static const std::vector<F32WinoUkernel> table = {
#define X DLAS_F32_WINO_ROW
#define T(name, isa, lanes)
#include "algo/microkernels/f32-wino/f32_wino.inc"
#undef T
#undef X
  };
  return table;
}

const std::vector<F32WinoUkernel>& f32_wino_test_only_ukernels() {
  static const std::vector<F32WinoUkernel> table = {
#define X(name, isa, lanes)
#define T DLAS_F32_WINO_ROW
#include "algo/microkernels/f32-wino/f32_wino.inc"
#undef T
#undef X
  };
  return table;
}

const F32WinoUkernel& f32_wino_default(Isa isa) {
  for (int level = static_cast<int>(isa); level >= 0; --level)
    for (const F32WinoUkernel& u : f32_wino_ukernels())
      if (static_cast<int>(u.isa) == level) return u;
  fail(ErrorKind::kInternal, "no f32 Winograd kernel for ", isa_name(isa));
}

}  // namespace dlas::ukernel

// The f32 Winograd transform kernel table, derived from f32_wino.inc.
#include "algo/microkernels/f32-wino/f32_wino.h"
#include "algo/microkernels/isa_dispatch.h"
#include "dlas/core/error.h"

namespace dlas::ukernel {

namespace {
F32WinoUkernel row(const char* name, Isa isa, int lanes, F32WinoInputFn input_f2,
                   F32WinoInputFn input_f4, F32WinoOutputFn output_f2, F32WinoOutputFn output_f4) {
  return {name, isa, lanes, input_f2, input_f4, output_f2, output_f4};
}
#define DLAS_F32_WINO_ROW(name, isa, lanes)                                          \
  row(#name, Isa::isa, lanes, &name##_input_f2, &name##_input_f4, &name##_output_f2, \
      &name##_output_f4)

const ListRows<F32WinoUkernel>& rows() {
  static const ListRows<F32WinoUkernel> r = {
#define X(name, isa, lanes) {false, DLAS_F32_WINO_ROW(name, isa, lanes)},
#define T(name, isa, lanes) {true, DLAS_F32_WINO_ROW(name, isa, lanes)},
#include "algo/microkernels/f32-wino/f32_wino.inc"
#undef T
#undef X
  };
  return r;
}
}  // namespace

const std::vector<F32WinoUkernel>& f32_wino_ukernels() { return rows().production; }
const std::vector<F32WinoUkernel>& f32_wino_test_only_ukernels() { return rows().test_only; }

const F32WinoUkernel& f32_wino_default(Isa isa) {
  for (int level = static_cast<int>(isa); level >= 0; --level)
    for (const F32WinoUkernel& u : f32_wino_ukernels())
      if (static_cast<int>(u.isa) == level) return u;
  fail(ErrorKind::kInternal, "no f32 Winograd kernel for ", isa_name(isa));
}

}  // namespace dlas::ukernel

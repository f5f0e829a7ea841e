// The channels-as-lanes int8 depthwise kernel dispatch, derived from qs8_dwchan.inc, and the
// geometry every kernel shares.
#include <algorithm>

#include "algo/microkernels/isa_dispatch.h"
#include "algo/microkernels/qs8-dwchan/qs8_dwchan.h"

namespace dlas::ukernel {

void qs8_dwchan_config(QS8DwChanConfig& c, int64_t staging_bytes) {
  c.wp = (c.ow - 1) * c.sw + (c.kw - 1) * c.dw + 1;
  auto rows_of = [&](int64_t band) { return (band - 1) * c.sh + (c.kh - 1) * c.dh + 1; };
  const int64_t row_bytes = c.wp * c.lanes * 4;
  c.band = 1;
  while (c.band < c.oh && rows_of(c.band + 1) * row_bytes <= staging_bytes) ++c.band;
  c.rows = rows_of(c.band);
}

int64_t qs8_dwchan_buffer_elems(const QS8DwChanConfig& c) {
  return qs8_dwchan_header_elems(c) + c.rows * c.wp * c.lanes;
}

const QS8DwChanUkernel* qs8_dwchan_for(Isa isa) {
  if (base_isa(isa) == Isa::kScalar) return nullptr;
  static constexpr QS8DwChanUkernel kRows[] = {
#define X(fn, isa, lanes, tile) {#fn, Isa::isa, lanes, tile, &fn},
#include "algo/microkernels/qs8-dwchan/qs8_dwchan.inc"
#undef X
  };
  enum : int {
#define X(fn, isa, lanes, tile) k_##fn,
#include "algo/microkernels/qs8-dwchan/qs8_dwchan.inc"
#undef X
  };
  static constexpr IsaEntry<int> kList[] = {
#define X(fn, isa, lanes, tile) {k_##fn, Isa::isa},
#include "algo/microkernels/qs8-dwchan/qs8_dwchan.inc"
#undef X
  };
  return &kRows[best_for_isa(kList, isa, "qs8 dwchan")];
}

}  // namespace dlas::ukernel

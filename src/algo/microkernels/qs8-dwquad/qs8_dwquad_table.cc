// The int8 depthwise quad kernel dispatch, derived from qs8_dwquad.inc, and the geometry the
// kernels share.
#include <vector>

#include "algo/microkernels/qs8-dwquad/qs8_dwquad.h"

namespace dlas::ukernel {

bool qs8_dwquad_covers(int64_t kw, int64_t sh, int64_t sw, int64_t dh, int64_t dw) {
  return kw >= 1 && kw <= 8 && sh >= 1 && sh <= 2 && sw >= 1 && sw <= 2 && dh == 1 && dw == 1;
}

void qs8_dwquad_config(QS8DwQuadConfig& c, int64_t staging_bytes) {
  c.nq = (c.kw + 3) / 4;
  c.cols = (c.ow - 1) + 4 * (c.nq - 1) / c.sw + 1;
  auto rows_of = [&](int64_t band) { return (band - 1) * c.sh + c.kh; };
  const int64_t row_bytes = c.cols * 64;
  c.band = 1;
  while (c.band < c.oh && rows_of(c.band + 1) * row_bytes <= staging_bytes) ++c.band;
  c.rows = rows_of(c.band);
}

int64_t qs8_dwquad_buffer_bytes(const QS8DwQuadConfig& c) { return c.rows * c.cols * 64; }

const QS8DwQuadUkernel* qs8_dwquad_for(Isa isa) {
  static const std::vector<QS8DwQuadUkernel> rows = {
#define X(fn, isa) {#fn, Isa::isa, &fn},
#include "algo/microkernels/qs8-dwquad/qs8_dwquad.inc"
#undef X
  };
  for (const QS8DwQuadUkernel& k : rows)
    if (isa >= k.isa && isa_supported(k.isa)) return &k;
  return nullptr;
}

}  // namespace dlas::ukernel

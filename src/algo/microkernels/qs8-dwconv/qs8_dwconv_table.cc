// The int8 depthwise kernel dispatch, derived from qs8_dwconv.inc, and the geometry every
// kernel shares.
#include <algorithm>

#include "algo/microkernels/isa_dispatch.h"
#include "algo/microkernels/qs8-dwconv/qs8_dwconv.h"

namespace dlas::ukernel {
namespace {

int64_t round_up(int64_t a, int64_t b) { return (a + b - 1) / b * b; }

// Widest fill vector of any kernel, in int16 (2 x 16 lanes): xp keeps this much slack past
// the input row, pair rows are whole multiples of it.
constexpr int64_t kMaxFill = 32;

// Input rows per band: rows written and then read a band later (L1: 16 rows of a 112-pixel
// plane are ~10 KiB of pair rows).
constexpr int64_t kBandRows = 16;

}  // namespace

void qs8_dwconv_config(QS8DwConfig& c) {
  c.kwp = (c.kw + 1) / 2;
  const bool shared = (2 * c.dw) % c.sw == 0;
  c.nsub = shared ? 1 : c.kwp;
  c.tstep = shared ? 2 * c.dw / c.sw : 0;
  const int64_t max_off = shared ? (c.kwp - 1) * c.tstep : 0;
  c.wqp = round_up(round_up(c.ow, kMaxFill) + max_off, kMaxFill);
  c.direct = c.sw == 2 && c.dw == 1;
  const int64_t xp_need = c.pad_l + c.w + kMaxFill;  // whole-vector stores past the row
  if (c.direct) {
    c.wqp = std::max(c.wqp, round_up((xp_need + 1) / 2, kMaxFill));
    c.xp_len = 2 * c.wqp;
  } else {
    const int64_t u0max = shared ? 0 : 2 * (c.kwp - 1) * c.dw;
    c.xp_len = round_up(std::max(c.sw * (c.wqp - 1) + u0max + c.dw + 1, xp_need), 2 * kMaxFill);
  }
  if (!shared) c.tstep = c.wqp;
  c.slot = c.nsub * c.wqp;
  // Bands of output rows reading up to kBandRows input rows (at least one output row).
  auto in_rows = [&](int64_t b) { return (b - 1) * c.sh + (c.kh - 1) * c.dh + 1; };
  c.band = 1;
  while (c.band < c.oh && in_rows(c.band + 1) <= kBandRows) ++c.band;
  c.xp_rows = c.direct ? 0 : in_rows(c.band);
  c.ring = 1;  // a power of two (slot = row & (ring - 1)) >= the rows one band reads
  while (c.ring < in_rows(c.band)) c.ring *= 2;
}

int64_t qs8_dwconv_buffer_elems(const QS8DwConfig& c) {
  return 2 * c.slot * (1 + c.ring) + c.xp_rows * c.xp_len;
}

QS8DwFn qs8_dwconv_for(Isa isa) {
  static constexpr IsaEntry<QS8DwFn> kList[] = {
#define X(fn, isa, lanes) {&fn, Isa::isa},
#include "algo/microkernels/qs8-dwconv/qs8_dwconv.inc"
#undef X
  };
  return best_for_isa(kList, isa, "qs8 dwconv");
}

}  // namespace dlas::ukernel

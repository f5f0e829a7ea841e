// Fully-connected layers on int8 values (PreparedFullyConnectedQs8) with the int8 FC
// microkernels (qs8-fc): the rows of x are the tiles' broadcast operand (MR rows, u8 quads
// or s16 pairs), the weights their vector operand (NR-column panels packed once), so the
// vector lanes run over output columns and each column's zero-point correction, scale
// product and bias are one vector. An s8 x runs as u8 shifted by 128 (x ^ 0x80, and the
// zero point + 128): the correction -zp' * sum_kk w[kk][j], folded into the accumulators'
// initial value, makes each int32 sum exactly sum_kk (x - x_zp) * w. Rows of x are read in
// place where they already are u8 quads, else packed per row block into workspace slots.
#include <algorithm>
#include <cstring>
#include <limits>

#include "algo/microkernels/qs8-fc/qs8_fc.h"
#include "dlas/algo/fully_connected.h"
#include "dlas/core/error.h"
#include "dlas/hw/thread_pool.h"

namespace dlas {
namespace {

int64_t div_up(int64_t a, int64_t b) { return (a + b - 1) / b; }
size_t round64(size_t b) { return (b + 63) / 64 * 64; }

// Up to this many rows the path's MR = 1 tile runs once per row: an MR-row tile would spend
// MR times the dot products of the real rows (m = 3, k = 2048, n = 1000: 306 against 221
// GFLOP/s with 14x32 on one Zen 5 core; at 4 rows the two tie).
constexpr int64_t kFewRows = 3;
// Row-block-major loops stream W once per row block; they walk it in chunks of panels of
// at most this many bytes, so a chunk stays in L2 (1 MiB on Zen 5) while the row blocks
// of a thread pass over it. (Panel-major over a thread's row blocks, x streamed per panel,
// measured 2-5% slower on the ConvNeXt-tiny Linear layers.)
constexpr int64_t kWChunkBytes = 512 * 1024;

const ukernel::QS8FcUkernel& uk_of(const void* p) {
  return *static_cast<const ukernel::QS8FcUkernel*>(p);
}

// How run() covers m rows on `threads` threads.
struct Schedule {
  const ukernel::QS8FcUkernel* u;  // the tile
  bool by_rows;                    // threads take contiguous row blocks (else runs of N panels)
  bool packed;  // rows of x are packed into the threads' slots (else read in place)
  size_t slot;  // workspace bytes per thread
};

Schedule schedule(const ukernel::QS8FcUkernel& tile, const ukernel::QS8FcUkernel* row_tile,
                  int64_t k, int64_t kq, bool x_signed, int64_t m, int threads) {
  Schedule s;
  s.u = m <= kFewRows && row_tile ? row_tile : &tile;
  s.by_rows = div_up(m, s.u->mr) >= 4 * static_cast<int64_t>(threads);
  s.packed = s.u->kr != 4 || x_signed || k % 4 != 0;
  // By rows: one row block at a time; by panels: every thread packs all m (few) rows.
  const int64_t rows = s.by_rows ? s.u->mr : m;
  s.slot = s.packed ? round64(static_cast<size_t>(rows * kq * 4)) : 0;
  return s;
}

}  // namespace

bool PreparedFullyConnectedQs8::available(Isa isa) {
  return !ukernel::qs8_fc_ukernels_for(isa).empty();
}

PreparedFullyConnectedQs8::PreparedFullyConnectedQs8(int64_t k, int64_t n, const int8_t* w,
                                                     bool w_is_nk, const float* w_scale,
                                                     const float* bias, float x_scale,
                                                     int32_t x_zero_point, bool x_signed,
                                                     const Epilogue& epilogue, Isa isa)
    : k_(k),
      n_(n),
      isa_(isa),
      uk_(nullptr),
      uk1_(nullptr),
      x_signed_(x_signed),
      epilogue_(epilogue),
      lo_(epilogue.is_clamp() ? epilogue.clamp_min() : -std::numeric_limits<float>::infinity()),
      hi_(epilogue.is_clamp() ? epilogue.clamp_max() : std::numeric_limits<float>::infinity()) {
  DLAS_CHECK(!epilogue.residual, ErrorKind::kInvalidInput,
             "int8 fully connected: no residual epilogue");
  DLAS_CHECK(k > 0 && n > 0, ErrorKind::kInvalidInput, "int8 fully connected: empty weights");
  DLAS_CHECK(x_signed ? x_zero_point >= -128 && x_zero_point <= 127
                      : x_zero_point >= 0 && x_zero_point <= 255,
             ErrorKind::kInvalidInput, "int8 fully connected: zero point ", x_zero_point,
             " out of the range of x");
  const std::vector<const ukernel::QS8FcUkernel*> cands = ukernel::qs8_fc_ukernels_for(isa);
  DLAS_CHECK(!cands.empty(), ErrorKind::kUnsupported, "int8 fully connected: the ", isa_name(isa),
             " path has no int8 FC microkernel");
  const ukernel::QS8FcUkernel& u = *cands.front();
  uk_ = &u;
  for (const ukernel::QS8FcUkernel* c : cands)
    if (c->isa == u.isa && c->mr == 1 && c->nr == u.nr && c->kr == u.kr) {
      uk1_ = c;
      break;
    }
  x_zp_stored_ = static_cast<uint8_t>(x_zero_point);
  const int64_t nr = u.nr, zp_u8 = x_signed ? x_zero_point + 128 : x_zero_point;
  kq_ = div_up(k, u.kr);
  npanels_ = div_up(n, nr);
  const size_t panel_bytes = static_cast<size_t>(kq_ * nr * 4);
  wpack_.assign(npanels_ * panel_bytes, 0);
  init_.assign(static_cast<size_t>(npanels_ * nr), 0);
  mult_.assign(init_.size(), 0.f);
  bias_.assign(init_.size(), 0.f);
  const size_t ldk = w_is_nk ? static_cast<size_t>(k) : 1, sk = w_is_nk ? 1 : n;
  for (int64_t p = 0; p < npanels_; ++p) {
    const int64_t c0 = p * nr, cols = std::min(nr, n - c0);
    const int8_t* wc = w + c0 * static_cast<int64_t>(w_is_nk ? k : 1);
    uint8_t* panel = wpack_.data() + p * panel_bytes;
    if (u.kr == 4)
      ukernel::qs8_fc_pack_w<4>(nr, cols, k, wc, ldk, sk, panel);
    else
      ukernel::qs8_fc_pack_w<2>(nr, cols, k, wc, ldk, sk, panel);
  }
  for (int64_t j = 0; j < n; ++j) {
    int64_t sum = 0;
    for (int64_t kk = 0; kk < k; ++kk) sum += w[j * ldk + kk * sk];
    init_[j] = static_cast<int32_t>(-zp_u8 * sum);
    mult_[j] = x_scale * w_scale[j];
    if (bias) bias_[j] = bias[j];
  }
}

const char* PreparedFullyConnectedQs8::ukernel_name() const { return uk_of(uk_).name; }

size_t PreparedFullyConnectedQs8::packed_bytes() const {
  return wpack_.size() + (init_.size() + mult_.size() + bias_.size()) * 4;
}

size_t PreparedFullyConnectedQs8::workspace_bytes(int64_t m, int threads) const {
  if (m <= 0) return 0;
  const Schedule s = schedule(uk_of(uk_), static_cast<const ukernel::QS8FcUkernel*>(uk1_), k_, kq_,
                              x_signed_, m, threads);
  return s.slot * static_cast<size_t>(threads);
}

void PreparedFullyConnectedQs8::run(int64_t m, const void* x_, float* y, void* workspace,
                                    ThreadPool& pool) const {
  if (m <= 0) return;
  const int threads = pool.threads();
  const Schedule s = schedule(uk_of(uk_), static_cast<const ukernel::QS8FcUkernel*>(uk1_), k_, kq_,
                              x_signed_, m, threads);
  const ukernel::QS8FcUkernel& u = *s.u;
  const int64_t mr = u.mr, nr = u.nr, mblocks = div_up(m, mr);
  const size_t ldx = s.packed ? static_cast<size_t>(kq_ * 4) : static_cast<size_t>(k_);
  const size_t panel_bytes = static_cast<size_t>(kq_ * nr * 4);
  const uint8_t* x = static_cast<const uint8_t*>(x_);
  // Packs `rows` rows of x from row r0 into dst (row i at dst + i * ldx).
  auto pack = [&](int64_t r0, int64_t rows, uint8_t* dst) {
    if (u.kr == 4)
      ukernel::qs8_fc_pack_x<4>(rows, k_, x + r0 * k_, x_signed_, x_zp_stored_, dst);
    else
      ukernel::qs8_fc_pack_x<2>(rows, k_, x + r0 * k_, x_signed_, x_zp_stored_, dst);
  };
  // One tile: row block mb (its rows at xb) against panel p.
  auto tile = [&](int64_t mb, const uint8_t* xb, int64_t p) {
    const int64_t r0 = mb * mr, c0 = p * nr;
    const ukernel::QS8FcParams params{init_.data() + c0, mult_.data() + c0, bias_.data() + c0, lo_,
                                      hi_};
    u.fn(static_cast<size_t>(std::min(mr, m - r0)), static_cast<size_t>(std::min(nr, n_ - c0)),
         static_cast<size_t>(kq_), xb, ldx, wpack_.data() + p * panel_bytes, y + r0 * n_ + c0,
         static_cast<size_t>(n_), params);
  };
  // An activation other than a clamp (GELU after a Linear layer) over columns [c0, c1) of
  // rows [r0, r1), once they are done: whole rows where a row block's panels end together
  // (one call per row block, its rows contiguous, not one per tile row of NR values).
  const bool act = !epilogue_.is_clamp();
  auto activate = [&](int64_t r0, int64_t r1, int64_t c0, int64_t c1) {
    if (c0 == 0 && c1 == n_)
      apply_epilogue(isa_, epilogue_, static_cast<size_t>((r1 - r0) * n_), y + r0 * n_, 0.f,
                     nullptr);
    else
      for (int64_t r = r0; r < r1; ++r)
        apply_epilogue(isa_, epilogue_, static_cast<size_t>(c1 - c0), y + r * n_ + c0, 0.f,
                       nullptr);
  };
  if (s.by_rows) {
    const int64_t chunk = std::max<int64_t>(1, kWChunkBytes / static_cast<int64_t>(panel_bytes));
    pool.parallel_for(static_cast<size_t>(threads), [&](size_t t) {
      uint8_t* slot = static_cast<uint8_t*>(workspace) + t * s.slot;
      const int64_t mb0 = mblocks * static_cast<int64_t>(t) / threads;
      const int64_t mb1 = mblocks * (static_cast<int64_t>(t) + 1) / threads;
      for (int64_t p0 = 0; p0 < npanels_; p0 += chunk)
        for (int64_t mb = mb0; mb < mb1; ++mb) {
          const uint8_t* xb = x + mb * mr * k_;
          if (s.packed) {
            pack(mb * mr, std::min(mr, m - mb * mr), slot);
            xb = slot;
          }
          for (int64_t p = p0; p < std::min(p0 + chunk, npanels_); ++p) tile(mb, xb, p);
          if (act && p0 + chunk >= npanels_) activate(mb * mr, std::min(m, (mb + 1) * mr), 0, n_);
        }
    });
  } else {
    const int64_t parts = std::min<int64_t>(threads, npanels_);
    pool.parallel_for(static_cast<size_t>(parts), [&](size_t t) {
      uint8_t* slot = static_cast<uint8_t*>(workspace) + t * s.slot;
      const uint8_t* xs = x;
      if (s.packed) {
        pack(0, m, slot);
        xs = slot;
      }
      const int64_t p0 = npanels_ * static_cast<int64_t>(t) / parts;
      const int64_t p1 = npanels_ * (static_cast<int64_t>(t) + 1) / parts;
      for (int64_t p = p0; p < p1; ++p)
        for (int64_t mb = 0; mb < mblocks; ++mb)
          tile(mb, xs + static_cast<size_t>(mb * mr) * ldx, p);
      if (act) activate(0, m, p0 * nr, std::min(p1 * nr, n_));
    });
  }
}

}  // namespace dlas

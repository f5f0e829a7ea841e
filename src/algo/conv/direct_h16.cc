// `direct` for 16-bit tensors. On the amx path a bf16 conv with stride <= 2, no dilation, one
// group and at least 16 input channels runs an implicit GEMM on AMX tiles
// (bf16_dconv_32x32__amx), with no im2col:
//   - per image, the input is interleaved once into zero-padded planes of channel pairs
//     (uint32 (channel 2q, channel 2q + 1) per padded pixel; channels past C zero), split
//     into stride phases and read in place on the virtual grid of amx_direct_grid.h;
//   - weights are packed once into [32-channel panel][tap][32-channel block][32][32] tiles;
//     a conv with fewer than 32 input channels reduces one block of only its channel pairs;
//   - a tile is 32 output channels x two runs of 16 virtual pixels, reduced over every tap
//     and channel block in one kernel call;
//   - a work item is `group` consecutive tiles of one channel panel, stored side by side in
//     a 32 x (group * 32) f32 block; each row's real pixels (consecutive in the output) are
//     moved to its front, then bias, residual and activation in f32 (apply_epilogue) and
//     one rounding to bf16 per channel over the group's whole output stretch.
// Every other 16-bit direct conv is the widened f32 twin (widened_h16.cc).
// Knobs (AMX path): order (0: channel panels outer, the A panel reused across pixel runs;
// 1: pixel runs outer, the B rows reused across channel panels) and group (tiles per work
// item: longer epilogue runs against finer load balance).
#include <memory>
#include <vector>

#include "algo/conv/amx_direct_grid.h"
#include "algo/conv/conv_impl.h"
#include "algo/conv/gemm_common.h"
#include "algo/microkernels/h16-gemm/h16_gemm.h"
#include "algo/microkernels/h16-vcvt/h16_vcvt.h"
#include "dlas/core/aligned_vector.h"
#include "dlas/core/error.h"
#include "dlas/hw/amx.h"
#include "dlas/hw/thread_pool.h"

namespace dlas {
namespace {

using conv_detail::chunk_range;
using conv_detail::div_up;
using conv_detail::round_up;

using conv_detail::AmxRun;
using conv_detail::kAmxRun;
constexpr int64_t kBlk = 32;  // channels per tile (output panel rows, input block width)

class PreparedAmxDirectHConv final : public PreparedH16Conv {
 public:
  PreparedAmxDirectHConv(const ConvProblem& p, const uint16_t* w, const float* bias,
                         const Knobs& kn, Isa isa)
      : p_(p),
        grid_(p, div_up(p.c, kBlk) * (kBlk / 2)),
        base_(base_isa(isa)),
        cvt_(&ukernel::h16_vcvt_for(DType::kBF16, isa)) {
    order_ = kn.at("order");
    group_ = kn.at("group");
    cb_ = div_up(p.c, kBlk);
    // Fewer than 32 input channels: one shallower step of the channel pairs only (the tile
    // configuration's depth), not a 32-channel step whose rows past C are zeros.
    kp_ = cb_ == 1 ? div_up(p.c, 2) : kBlk / 2;
    panels_ = div_up(p.k, kBlk);
    taps_ = p.kh * p.kw;
    steps_ = taps_ * cb_;
    groups_ = div_up(div_up(static_cast<int64_t>(grid_.runs().size()), 2), group_);
    boff_ = grid_.step_offsets();
    zero_plane_.assign(static_cast<size_t>(p.h * p.w), 0);
    // Weights [K][C][KH][KW] -> [panel][tap][cb][32 out][32 in]; padding channels zero.
    wpack_.assign(static_cast<size_t>(panels_ * steps_ * kBlk * kBlk), 0);
    for (int64_t kk = 0; kk < p.k; ++kk)
      for (int64_t ch = 0; ch < p.c; ++ch)
        for (int64_t t = 0; t < taps_; ++t) {
          const int64_t s = t * cb_ + ch / kBlk;
          wpack_[static_cast<size_t>(((kk / kBlk * steps_ + s) * kBlk + kk % kBlk) * kBlk +
                                     ch % kBlk)] = w[(kk * p.c + ch) * taps_ + t];
        }
    bias_.assign(static_cast<size_t>(p.k), 0.f);
    if (bias) bias_.assign(bias, bias + p.k);
  }

  size_t workspace_bytes(int threads) const override {
    return static_cast<size_t>(xp_bytes() + threads * (slot_bytes() + row_bytes()));
  }
  size_t packed_bytes() const override { return wpack_.size() * 2 + bias_.size() * 4; }
  ConvCompute compute() const override { return ConvCompute::kAmxBf16; }

  void run_typed(const uint16_t* x, uint16_t* y, const uint16_t* residual, void* workspace,
                 ThreadPool& pool) const override {
    uint32_t* xp = static_cast<uint32_t*>(workspace);
    char* slots = static_cast<char*>(workspace) + xp_bytes();
    const int64_t threads = pool.threads();
    const int64_t npairs = cb_ == 1 ? kp_ : cb_ * (kBlk / 2), items = panels_ * groups_;
    for (int64_t n = 0; n < p_.n; ++n) {
      const uint16_t* img = x + n * p_.c * p_.h * p_.w;
      pool.parallel_for(static_cast<size_t>(threads), [&](size_t t) {
        int64_t b, e;
        chunk_range(npairs, threads, static_cast<int64_t>(t), &b, &e);
        uint32_t* row = reinterpret_cast<uint32_t*>(slots + threads * slot_bytes() +
                                                    static_cast<int64_t>(t) * row_bytes());
        for (int64_t q = b; q < e; ++q) interleave_pair(img, q, xp + q * grid_.group_stride(), row);
      });
      pool.parallel_for(static_cast<size_t>(threads), [&](size_t t) {
        int64_t b, e;
        chunk_range(items, threads, static_cast<int64_t>(t), &b, &e);
        float* slot = reinterpret_cast<float*>(slots + static_cast<int64_t>(t) * slot_bytes());
        for (int64_t it = b; it < e; ++it) {
          const int64_t panel = order_ == 0 ? it / groups_ : it % panels_;
          const int64_t grp = order_ == 0 ? it % groups_ : it / panels_;
          tiles(xp, n, panel, grp, y, residual, slot);
        }
      });
    }
  }

 private:
  int64_t xp_bytes() const { return round_up(grid_.input_words() * 4, 64); }
  int64_t row_bytes() const { return round_up(grid_.row_words() * 4, 64); }
  // 32 x (group * 32) f32 block, one f32 residual stretch.
  int64_t ldc() const { return group_ * 2 * kAmxRun; }
  int64_t slot_bytes() const { return round_up((kBlk + 1) * ldc() * 4, 64); }

  // The phase planes of channel pair q: (c 2q, c 2q + 1) per pixel, zero outside the image.
  void interleave_pair(const uint16_t* img, int64_t q, uint32_t* dst, uint32_t* row) const {
    const int64_t c0 = 2 * q, hw = p_.h * p_.w;
    grid_.interleave(dst, row, 0u, [&](int64_t sy, int64_t rows, uint32_t* __restrict r) {
      const uint16_t* __restrict ra = c0 < p_.c ? img + c0 * hw + sy * p_.w : zero_plane_.data();
      const uint16_t* __restrict rb =
          c0 + 1 < p_.c ? img + (c0 + 1) * hw + sy * p_.w : zero_plane_.data();
      for (int64_t i = 0; i < rows * p_.w; ++i)
        r[i] = static_cast<uint32_t>(ra[i]) | static_cast<uint32_t>(rb[i]) << 16;
    });
  }

  // Group grp of channel panel `panel`: its tiles' runs r0 .. r1 - 1, slot column 16 * (r - r0).
  void tiles(const uint32_t* xp, int64_t n, int64_t panel, int64_t grp, uint16_t* y,
             const uint16_t* residual, float* slot) const {
    const std::vector<AmxRun>& runs = grid_.runs();
    const int64_t nruns = static_cast<int64_t>(runs.size());
    const int64_t r0 = grp * group_ * 2;
    const int64_t r1 = r0 + group_ * 2 < nruns ? r0 + group_ * 2 : nruns;
    const int64_t ld = ldc();
    for (int64_t r = r0; r < r1; r += 2) {
      const AmxRun& a = runs[static_cast<size_t>(r)];
      const AmxRun& b = runs[static_cast<size_t>(r + 1 < r1 ? r + 1 : r)];
      ukernel::bf16_dconv_32x32__amx(
          static_cast<size_t>(steps_), wpack_.data() + panel * steps_ * kBlk * kBlk, xp + a.j0,
          xp + b.j0, boff_.data(), static_cast<size_t>(grid_.group_stride() * 4),
          slot + (r - r0) * kAmxRun, static_cast<size_t>(ld), static_cast<int>(4 * kp_), r == r0);
    }
    // The group's real pixels: one stretch of the output from runs[r0].out.
    bool full = true;
    int64_t cols = 0;
    for (int64_t r = r0; r < r1; ++r) {
      const uint16_t mask = runs[static_cast<size_t>(r)].mask;
      full = full && mask == 0xffff;
      cols += __builtin_popcount(mask);
    }
    float* rbuf = slot + kBlk * ld;
    const int64_t ohw = p_.oh() * p_.ow();
    const int64_t kmax = p_.k - panel * kBlk < kBlk ? p_.k - panel * kBlk : kBlk;
    for (int64_t m = 0; m < kmax; ++m) {
      float* row = slot + m * ld;
      if (!full) {  // move each run's real pixels to the front, in order (never overtaking)
        int64_t d = 0;
        for (int64_t r = r0; r < r1; ++r) {
          const uint16_t mask = runs[static_cast<size_t>(r)].mask;
          const float* src = row + (r - r0) * kAmxRun;
          for (int64_t l = 0; l < kAmxRun; ++l)
            if (mask >> l & 1) row[d++] = src[l];
        }
      }
      const int64_t kk = panel * kBlk + m;
      const int64_t off = (n * p_.k + kk) * ohw + runs[static_cast<size_t>(r0)].out;
      if (residual) cvt_->widen(static_cast<size_t>(cols), residual + off, rbuf);
      apply_epilogue(base_, p_.epilogue, static_cast<size_t>(cols), row,
                     bias_[static_cast<size_t>(kk)], residual ? rbuf : nullptr);
      cvt_->narrow(static_cast<size_t>(cols), row, y + off);
    }
  }

  ConvProblem p_;
  conv_detail::AmxDirectGrid grid_;
  Isa base_;
  const ukernel::H16Vcvt* cvt_;
  int64_t order_, group_, cb_, kp_, panels_, taps_, steps_, groups_;
  std::vector<uint16_t> zero_plane_;  // a padding channel's plane
  AlignedVector<uint16_t> wpack_;
  std::vector<int64_t> boff_;
  std::vector<float> bias_;
};

}  // namespace

namespace hconv_detail {
bool amx_direct_applies(const ConvProblem& p, Isa isa) {
  return p.w_type == DType::kBF16 && p.x_type == DType::kBF16 && isa >= Isa::kAmx &&
         isa_supported(Isa::kAmx) && !p.is_blocked() && p.groups == 1 && p.stride_h <= 2 &&
         p.stride_w <= 2 && p.dil_h == 1 && p.dil_w == 1 && p.c >= 16 &&
         p.oh() * p.ow() >= kAmxDirectMinPixels;
}
}  // namespace hconv_detail

const ConvAlgorithm& direct_hconv_algorithm() {
  static const conv_detail::AmxDirectAlgorithm algo(
      hconv_detail::amx_direct_applies, hconv_detail::widened_direct_hconv_algorithm,
      [](const ConvProblem& p, const ConvWeights& w, const Knobs& knobs,
         Isa isa) -> std::unique_ptr<PreparedConv> {
        return std::make_unique<PreparedAmxDirectHConv>(p, w.half_data(), w.bias, knobs, isa);
      },
      "bf16 direct conv (AMX)");
  return algo;
}

}  // namespace dlas

// int8 `direct`. On the amx path an int8 conv with stride <= 2, no dilation, one group and
// at least 8 input channels runs an implicit GEMM on AMX tiles (qs8_dconv_32x32__amx), with
// no im2col:
//   - per image, the input is interleaved once into padded planes of channel quads (one
//     uint32 per padded pixel: channels 4q .. 4q + 3 as stored bytes, s8 flipped to u8;
//     padding holds the stored zero point, so init = bias - zp * sum(w) folds it as in
//     gemm), split into stride phases and read in place on the virtual grid of
//     amx_direct_grid.h;
//   - weights are packed once into [32-channel panel][tap][64-channel block][32][64] bytes;
//     a conv with fewer than 64 input channels reduces one block of only its channel quads
//     (the tile configuration's depth), the rest of each weight row unread;
//   - a tile is 32 output channels x two runs of 16 virtual pixels, reduced over every tap
//     and channel block in one kernel call, which then requantizes it (+ residual, clamp)
//     and stores each run's real pixels, consecutive in the NCHW output;
//   - a work item is `group` consecutive tiles of one channel panel.
// Every other int8 direct conv is the vector direct (spatial_pack_qs8.cc, kImage).
// Knobs (AMX path): order (0: channel panels outer, the weights reused across pixel runs;
// 1: pixel runs outer, the input rows reused across channel panels) and group (tiles per
// work item: fewer tile configurations against finer load balance).
#include <memory>
#include <vector>

#include "algo/conv/amx_direct_grid.h"
#include "algo/conv/conv_impl.h"
#include "algo/conv/gemm_common.h"
#include "algo/conv/qs8_common.h"
#include "algo/microkernels/qs8-pack/qs8_pack.h"
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
constexpr int64_t kOut = 32;  // output channels per tile
constexpr int64_t kIn = 64;   // input channels per reduction step (a 64-byte tile row)
// Measured (dlas_bench_qconv, 2 threads, Sapphire Rapids-class): with the shallow step the
// tiles beat gemm 1.2-3x on 8- and 12-channel convs (channel-pruned layers, 1x1 and 3x3);
// on 1- and 3-channel stems the two were level within the host's noise, so stems stay on
// gemm.
constexpr int64_t kMinChannels = 8;

class PreparedAmxDirectQConv final : public qconv_detail::PreparedInt8Conv {
 public:
  PreparedAmxDirectQConv(const ConvProblem& p, const int8_t* w, const float* w_scale,
                         const int32_t* bias, const Knobs& kn, Isa isa)
      : p_(p), grid_(p, div_up(p.c, kIn) * (kIn / 4)), pack_(ukernel::qs8_pack_for(isa)) {
    order_ = kn.at("order");
    group_ = kn.at("group");
    cb_ = div_up(p.c, kIn);
    // Fewer than 64 input channels: one shallower step (the channel quads only), instead of
    // a 64-channel step whose rows past C are zeros (mobilenetv2's 1x1 convs on 16-32
    // channels at 112x112 and 56x56 did 2-4x the tile work and interleaved as many zero
    // planes).
    kq_ = cb_ == 1 ? div_up(p.c, 4) : kIn / 4;
    panels_ = div_up(p.k, kOut);
    taps_ = p.kh * p.kw;
    steps_ = taps_ * cb_;
    groups_ = div_up(div_up(static_cast<int64_t>(grid_.runs().size()), 2), group_);
    boff_ = grid_.step_offsets();
    xzp_ = static_cast<uint8_t>(qconv_detail::stored_zero_point(p.quant.x));
    flip_ = p.quant.x.type == DType::kS8 ? 0x80 : 0;
    zero_plane_.assign(static_cast<size_t>(p.h * p.w), static_cast<uint8_t>(xzp_ ^ flip_));
    // Weights [K][C][KH][KW] -> [panel][tap][cb][32 out][64 in]; padding channels zero.
    wpack_.assign(static_cast<size_t>(panels_ * steps_ * kOut * kIn), 0);
    for (int64_t kk = 0; kk < p.k; ++kk)
      for (int64_t ch = 0; ch < p.c; ++ch)
        for (int64_t t = 0; t < taps_; ++t) {
          const int64_t s = t * cb_ + ch / kIn;
          wpack_[static_cast<size_t>(((kk / kOut * steps_ + s) * kOut + kk % kOut) * kIn +
                                     ch % kIn)] =
              static_cast<uint8_t>(w[(kk * p.c + ch) * taps_ + t]);
        }
    const qconv_detail::ChannelTerms terms = qconv_detail::channel_terms(p, w, w_scale, bias);
    init_.assign(static_cast<size_t>(panels_ * kOut), 0);
    mult_.assign(init_.size(), 0.f);
    for (int64_t kk = 0; kk < p.k; ++kk) {
      init_[static_cast<size_t>(kk)] = terms.init[static_cast<size_t>(kk)];
      mult_[static_cast<size_t>(kk)] = terms.mult[static_cast<size_t>(kk)];
    }
    base_ = qconv_detail::base_params(p);
  }

  size_t workspace_bytes(int threads) const override {
    return static_cast<size_t>(xp_bytes() + threads * row_bytes());
  }
  size_t packed_bytes() const override {
    return wpack_.size() + init_.size() * sizeof(int32_t) + mult_.size() * sizeof(float);
  }
  ConvCompute compute() const override { return ConvCompute::kAmxInt8; }

  void run(const void* x, void* y, const void* residual, void* workspace,
           ThreadPool& pool) const override {
    uint32_t* xp = static_cast<uint32_t*>(workspace);
    char* rows = static_cast<char*>(workspace) + xp_bytes();
    const int64_t threads = pool.threads();
    const int64_t nquads = cb_ == 1 ? kq_ : cb_ * (kIn / 4), items = panels_ * groups_;
    const int64_t chw = p_.c * p_.h * p_.w, khw = p_.k * p_.oh() * p_.ow();
    for (int64_t n = 0; n < p_.n; ++n) {
      const uint8_t* img = static_cast<const uint8_t*>(x) + n * chw;
      pool.parallel_for(static_cast<size_t>(threads), [&](size_t t) {
        int64_t b, e;
        chunk_range(nquads, threads, static_cast<int64_t>(t), &b, &e);
        uint32_t* row = reinterpret_cast<uint32_t*>(rows + static_cast<int64_t>(t) * row_bytes());
        for (int64_t q = b; q < e; ++q) interleave_quad(img, q, xp + q * grid_.group_stride(), row);
      });
      uint8_t* yn = static_cast<uint8_t*>(y) + n * khw;
      const uint8_t* rn = residual ? static_cast<const uint8_t*>(residual) + n * khw : nullptr;
      pool.parallel_for(static_cast<size_t>(threads), [&](size_t t) {
        int64_t b, e;
        chunk_range(items, threads, static_cast<int64_t>(t), &b, &e);
        for (int64_t it = b; it < e; ++it) {
          const int64_t panel = order_ == 0 ? it / groups_ : it % panels_;
          const int64_t grp = order_ == 0 ? it % groups_ : it / panels_;
          tiles(xp, panel, grp, yn, rn);
        }
      });
    }
  }

 private:
  int64_t xp_bytes() const { return round_up(grid_.input_words() * 4, 64); }
  int64_t row_bytes() const { return round_up(grid_.row_words() * 4, 64); }

  // The phase planes of channel quad q: channels 4q .. 4q + 3 per pixel as stored bytes,
  // the stored zero point outside the image. `row`: a padded row of scratch.
  void interleave_quad(const uint8_t* img, int64_t q, uint32_t* dst, uint32_t* row) const {
    const int64_t hw = p_.h * p_.w;
    grid_.interleave(dst, row, 0x01010101u * xzp_, [&](int64_t sy, int64_t rows, uint32_t* r) {
      const uint8_t* src[4];
      for (int64_t e = 0; e < 4; ++e) {
        const int64_t ch = 4 * q + e;
        src[e] = ch < p_.c ? img + ch * hw + sy * p_.w : zero_plane_.data();
      }
      pack_.quads(src, static_cast<size_t>(rows * p_.w), flip_, reinterpret_cast<uint8_t*>(r));
    });
  }

  // Group grp of channel panel `panel`: its runs in pairs, one kernel call per pair.
  void tiles(const uint32_t* xp, int64_t panel, int64_t grp, uint8_t* y,
             const uint8_t* residual) const {
    const std::vector<AmxRun>& runs = grid_.runs();
    const int64_t nruns = static_cast<int64_t>(runs.size());
    const int64_t r0 = grp * group_ * 2;
    const int64_t r1 = r0 + group_ * 2 < nruns ? r0 + group_ * 2 : nruns;
    const int64_t ohw = p_.oh() * p_.ow();
    const int64_t k0 = panel * kOut;
    const size_t m = static_cast<size_t>(p_.k - k0 < kOut ? p_.k - k0 : kOut);
    ukernel::QS8GemmParams prm = base_;
    prm.init = init_.data() + k0;
    prm.mult = mult_.data() + k0;
    prm.residual = residual;
    const uint8_t* a = wpack_.data() + panel * steps_ * kOut * kIn;
    for (int64_t r = r0; r < r1; r += 2) {
      ukernel::QS8DconvOut out{};
      out.runs = r + 1 < r1 ? 2 : 1;
      const uint32_t* b[2] = {nullptr, nullptr};
      for (int j = 0; j < out.runs; ++j) {
        const AmxRun& run = runs[static_cast<size_t>(r + j)];
        const int64_t off = k0 * ohw + run.out;
        out.c[j] = y + off;
        out.r_at[j] = residual ? residual + off : nullptr;
        out.mask[j] = run.mask;
        b[j] = xp + run.j0;
      }
      ukernel::qs8_dconv_32x32__amx(m, static_cast<size_t>(steps_), a, b[0], b[1] ? b[1] : b[0],
                                    boff_.data(), static_cast<size_t>(grid_.group_stride() * 4),
                                    out, static_cast<size_t>(ohw), prm, static_cast<int>(4 * kq_),
                                    r == r0);
    }
  }

  ConvProblem p_;
  conv_detail::AmxDirectGrid grid_;
  const ukernel::QS8PackUkernels& pack_;
  int64_t order_, group_, cb_, kq_, panels_, taps_, steps_, groups_;
  uint8_t xzp_, flip_;
  std::vector<uint8_t> zero_plane_;  // a padding channel's plane, stored as xzp after the flip
  AlignedVector<uint8_t> wpack_;
  std::vector<int64_t> boff_;
  std::vector<int32_t> init_;
  std::vector<float> mult_;
  ukernel::QS8GemmParams base_;
};

}  // namespace

namespace qconv_detail {
bool amx_direct_applies(const ConvProblem& p, Isa isa) {
  return p.is_int8() && isa >= Isa::kAmx && isa_supported(Isa::kAmx) && !p.is_blocked() &&
         p.groups == 1 && p.stride_h <= 2 && p.stride_w <= 2 && p.dil_h == 1 && p.dil_w == 1 &&
         p.c >= kMinChannels;
}
}  // namespace qconv_detail

const ConvAlgorithm& direct_qconv_algorithm() {
  static const conv_detail::AmxDirectAlgorithm algo(
      qconv_detail::amx_direct_applies, qconv_detail::vector_or_nchwc_direct_qconv_algorithm,
      [](const ConvProblem& p, const ConvWeights& w, const Knobs& knobs,
         Isa isa) -> std::unique_ptr<PreparedConv> {
        return std::make_unique<PreparedAmxDirectQConv>(p, w.int8_data(), w.w_scale, w.bias_s32,
                                                        knobs, isa);
      },
      "int8 direct conv (AMX)");
  return algo;
}

}  // namespace dlas

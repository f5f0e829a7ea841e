// `gemm` convolution: per image and group, C[Kg][OH*OW] = W[Kg][R] x B[R][OH*OW] with
// R = C/g*KH*KW. B is im2col'ed block by block (nc pixels x kc rows) into NR-column
// panels in scratch; weights are packed once into MR-row panels. 1x1 stride-1 unpadded
// convs skip im2col: the offset table points B rows (= input channels) straight into
// the input (only a ragged last pixel panel is copied, so no read runs past the input).
//
// Knobs (BLIS-style cache blocking over a register-tiled microkernel):
//   ukernel      which microkernel (tile MR x NR)
//   mc, kc, nc   block of output channels / reduction rows / pixels per pass
//   loop_order   0: pixel panels outer, channel panels inner (B panel stays in L1);
//                1: channel panels outer (A panel stays in L1)
//   parallel     0: threads split pixel blocks (each packs its own B);
//                1: threads split output channels of one shared packed B block
#include <limits>
#include <memory>

#include "algo/conv/gemm_common.h"
#include "dlas/core/error.h"
#include "dlas/hw/thread_pool.h"

namespace dlas {
namespace {

using conv_detail::div_up;
using conv_detail::round_up;

struct RowTap {      // reduction row r = (c, ky, kx) of one group
  int64_t chan_off;  // c * H * W
  int64_t dy, dx;    // ky * dil_h - pad_t, kx * dil_w - pad_l
};

class PreparedGemmConv final : public PreparedConv {
 public:
  PreparedGemmConv(const ConvProblem& p, const float* w, const float* bias, const Knobs& kn,
                   Isa isa)
      : p_(p), isa_(isa), uk_(&conv_detail::ukernel_from_knob(isa, kn.at("ukernel"))) {
    mr_ = uk_->mr, nr_ = uk_->nr;
    kg_ = p.k_per_group(), cg_ = p.c_per_group();
    r_ = cg_ * p.kh * p.kw;
    ohw_ = p.oh() * p.ow();
    mc_ = round_up(kn.at("mc"), mr_);
    kc_ = kn.at("kc") < r_ ? kn.at("kc") : r_;
    nc_ = round_up(kn.at("nc"), nr_);
    if (nc_ > round_up(ohw_, nr_)) nc_ = round_up(ohw_, nr_);
    loop_order_ = kn.at("loop_order");
    by_channels_ = kn.at("parallel") == 1;
    direct_b_ = p.kh == 1 && p.kw == 1 && p.stride_h == 1 && p.stride_w == 1 && p.pad_t == 0 &&
                p.pad_l == 0 && p.pad_b == 0 && p.pad_r == 0;
    panels_ = div_up(kg_, mr_);
    wpack_ = conv_detail::pack_conv_weights(p, w, mr_);
    bias_.assign(static_cast<size_t>(panels_ * mr_ * p.groups), 0.f);
    if (bias)
      for (int64_t g = 0; g < p.groups; ++g)
        for (int64_t i = 0; i < kg_; ++i) bias_[g * panels_ * mr_ + i] = bias[g * kg_ + i];
    for (int64_t kk = 0; kk < r_; ++kk) {
      panel_off_.push_back(kk * nr_);
      chan_off_.push_back(kk * p.h * p.w);
    }
    for (int64_t c = 0; c < cg_; ++c)
      for (int64_t ky = 0; ky < p.kh; ++ky)
        for (int64_t kx = 0; kx < p.kw; ++kx)
          taps_.push_back({c * p.h * p.w, ky * p.dil_h - p.pad_t, kx * p.dil_w - p.pad_l});
    const Epilogue& e = p.epilogue;
    fuse_clamp_ = e.is_clamp() && !e.residual;
    post_epilogue_ = !fuse_clamp_;
    cmin_ = fuse_clamp_ ? e.clamp_min() : -std::numeric_limits<float>::infinity();
    cmax_ = fuse_clamp_ ? e.clamp_max() : std::numeric_limits<float>::infinity();
  }

  size_t workspace_bytes(int threads) const override {
    // parallel=channels: one shared block of all R rows; else one kc-row block per thread.
    const int64_t rows = by_channels_ ? r_ : kc_;
    const int64_t slots = by_channels_ ? 1 : threads;
    return static_cast<size_t>(slots * conv_detail::slot_floats(rows * nc_)) * sizeof(float);
  }

  size_t packed_bytes() const override { return (wpack_.size() + bias_.size()) * sizeof(float); }

  void run(const float* in, float* out, const float* residual, void* workspace,
           ThreadPool& pool) const override {
    float* ws = static_cast<float*>(workspace);
    const int64_t nblocks = div_up(ohw_, nc_);
    const int64_t threads = pool.threads();
    if (!by_channels_) {
      const int64_t items = p_.n * p_.groups * nblocks;
      const int64_t slot = conv_detail::slot_floats(kc_ * nc_);
      pool.parallel_for(static_cast<size_t>(threads), [&](size_t t) {
        int64_t b, e;
        conv_detail::chunk_range(items, threads, static_cast<int64_t>(t), &b, &e);
        float* buf = ws + static_cast<int64_t>(t) * slot;
        for (int64_t it = b; it < e; ++it) {
          const int64_t nb = it % nblocks, ng = it / nblocks;
          block(in, out, residual, ng / p_.groups, ng % p_.groups, nb, 0, panels_, buf, false);
        }
      });
      return;
    }
    for (int64_t n = 0; n < p_.n; ++n)
      for (int64_t g = 0; g < p_.groups; ++g)
        for (int64_t nb = 0; nb < nblocks; ++nb) {
          // Phase 1: pack all R rows of this pixel block, split over pixel panels.
          const int64_t p0 = nb * nc_, ncols = ohw_ - p0 < nc_ ? ohw_ - p0 : nc_;
          const int64_t npanels = div_up(ncols, nr_);
          pool.parallel_for(static_cast<size_t>(threads), [&](size_t t) {
            int64_t b, e;
            conv_detail::chunk_range(npanels, threads, static_cast<int64_t>(t), &b, &e);
            pack_panels(in, n, g, p0, ncols, 0, r_, b, e, ws);
          });
          // Phase 2: output-channel panels split over threads.
          pool.parallel_for(static_cast<size_t>(threads), [&](size_t t) {
            int64_t b, e;
            conv_detail::chunk_range(panels_, threads, static_cast<int64_t>(t), &b, &e);
            if (b < e) block(in, out, residual, n, g, nb, b, e, ws, true);
          });
        }
  }

 private:
  bool direct_panel(int64_t p0, int64_t j) const { return direct_b_ && p0 + (j + 1) * nr_ <= ohw_; }

  // im2col of reduction rows [r0, r1) for pixel panels [j0, j1) of the block starting at
  // pixel p0 (ncols pixels) into buf: panel j at buf + j * (r1 - r0) * NR, row-major [r][NR].
  void pack_panels(const float* in, int64_t n, int64_t g, int64_t p0, int64_t ncols, int64_t r0,
                   int64_t r1, int64_t j0, int64_t j1, float* buf) const {
    const int64_t ow = p_.ow(), sh = p_.stride_h, sw = p_.stride_w, h = p_.h, w = p_.w;
    const float* img = in + (n * p_.c + g * cg_) * h * w;
    const int64_t kcols = r1 - r0;
    for (int64_t j = j0; j < j1; ++j) {
      if (direct_panel(p0, j)) continue;
      const int64_t q0 = p0 + j * nr_;
      const int64_t q1 = q0 + nr_ < p0 + ncols ? q0 + nr_ : p0 + ncols;  // valid pixels
      float* dst = buf + j * kcols * nr_;
      for (int64_t r = r0; r < r1; ++r, dst += nr_) {
        const RowTap& tap = taps_[static_cast<size_t>(r)];
        const float* src = img + tap.chan_off;
        int64_t q = q0;
        while (q < q1) {  // one output-row segment at a time
          const int64_t oy = q / ow, ox0 = q % ow;
          const int64_t ox1 = ox0 + (q1 - q) < ow ? ox0 + (q1 - q) : ow;
          float* d = dst + (q - q0) - ox0;  // d[ox] is pixel (oy, ox)
          const int64_t iy = oy * sh + tap.dy;
          if (iy < 0 || iy >= h) {
            for (int64_t ox = ox0; ox < ox1; ++ox) d[ox] = 0.f;
          } else {
            // ix = ox * sw + dx in [0, w)  <=>  ox in [lo, hi)
            int64_t lo = tap.dx >= 0 ? 0 : div_up(-tap.dx, sw);
            int64_t hi = w - tap.dx <= 0 ? 0 : div_up(w - tap.dx, sw);
            lo = lo < ox0 ? ox0 : lo;
            hi = hi > ox1 ? ox1 : hi;
            if (hi < lo) hi = lo;
            const float* s = src + iy * w + tap.dx;
            int64_t ox = ox0;
            for (; ox < lo; ++ox) d[ox] = 0.f;
            if (sw == 1)
              for (; ox < hi; ++ox) d[ox] = s[ox];
            else
              for (; ox < hi; ++ox) d[ox] = s[ox * sw];
            for (; ox < ox1; ++ox) d[ox] = 0.f;
          }
          q += ox1 - ox0;
        }
        for (int64_t x = q1 - q0; x < nr_; ++x) dst[x] = 0.f;
      }
    }
  }

  // One pixel block of image n, group g, output-channel panels [ip0, ip1). When
  // `packed_all` the block's B (all R rows) is already in buf; else it is packed here
  // kc rows at a time.
  void block(const float* in, float* out, const float* residual, int64_t n, int64_t g, int64_t nb,
             int64_t ip0, int64_t ip1, float* buf, bool packed_all) const {
    const int64_t p0 = nb * nc_, ncols = ohw_ - p0 < nc_ ? ohw_ - p0 : nc_;
    const int64_t npanels = div_up(ncols, nr_);
    const float* in_g = in + (n * p_.c + g * cg_) * p_.h * p_.w;
    float* out_g = out + (n * p_.k + g * kg_) * ohw_;
    const float* wg = wpack_.data() + g * panels_ * r_ * mr_;
    const float* bias_g = bias_.data() + g * panels_ * mr_;
    const float inf = std::numeric_limits<float>::infinity();
    for (int64_t r0 = 0; r0 < r_; r0 += kc_) {
      const int64_t kcols = r_ - r0 < kc_ ? r_ - r0 : kc_;
      const bool first = r0 == 0, last = r0 + kcols == r_;
      // packed_all: panel j holds all R rows at buf + j * R * NR; else this kc block's rows.
      if (!packed_all) pack_panels(in, n, g, p0, ncols, r0, r0 + kcols, 0, npanels, buf);
      for (int64_t m0 = ip0; m0 < ip1; m0 += mc_ / mr_) {
        const int64_t m1 = m0 + mc_ / mr_ < ip1 ? m0 + mc_ / mr_ : ip1;
        auto call = [&](int64_t ip, int64_t j) {
          const float* b;
          const int64_t* off;
          if (direct_panel(p0, j)) {
            b = in_g + r0 * p_.h * p_.w + p0 + j * nr_;
            off = chan_off_.data();
          } else if (packed_all) {
            b = buf + j * r_ * nr_ + r0 * nr_;
            off = panel_off_.data();
          } else {
            b = buf + j * kcols * nr_;
            off = panel_off_.data();
          }
          const int64_t rows = kg_ - ip * mr_ < mr_ ? kg_ - ip * mr_ : mr_;
          const int64_t cols = ncols - j * nr_ < nr_ ? ncols - j * nr_ : nr_;
          uk_->fn(static_cast<size_t>(rows), static_cast<size_t>(cols), static_cast<size_t>(kcols),
                  wg + (ip * r_ + r0) * mr_, b, off, out_g + ip * mr_ * ohw_ + p0 + j * nr_,
                  static_cast<size_t>(ohw_), first ? bias_g + ip * mr_ : nullptr, !first,
                  last ? cmin_ : -inf, last ? cmax_ : inf);
        };
        if (loop_order_ == 0) {
          for (int64_t j = 0; j < npanels; ++j)
            for (int64_t ip = m0; ip < m1; ++ip) call(ip, j);
        } else {
          for (int64_t ip = m0; ip < m1; ++ip)
            for (int64_t j = 0; j < npanels; ++j) call(ip, j);
        }
      }
    }
    if (!post_epilogue_) return;
    const int64_t k_end = ip1 * mr_ < kg_ ? ip1 * mr_ : kg_;
    for (int64_t kk = ip0 * mr_; kk < k_end; ++kk) {
      const int64_t off = (n * p_.k + g * kg_ + kk) * ohw_ + p0;
      apply_epilogue(isa_, p_.epilogue, static_cast<size_t>(ncols), out + off, 0.f,
                     residual ? residual + off : nullptr);
    }
  }

  ConvProblem p_;
  Isa isa_;
  const ukernel::F32GemmUkernel* uk_;
  int64_t mr_, nr_, kg_, cg_, r_, ohw_, mc_, kc_, nc_, loop_order_, panels_;
  bool by_channels_, direct_b_, fuse_clamp_, post_epilogue_;
  float cmin_, cmax_;
  std::vector<float> wpack_, bias_;
  std::vector<int64_t> panel_off_, chan_off_;
  std::vector<RowTap> taps_;
};

class GemmConvAlgorithm final : public ConvAlgorithm {
 public:
  std::string_view name() const override { return "gemm"; }
  bool supports(const ConvProblem&) const override { return true; }

  KnobSpace knob_space(const ConvProblem&, Isa isa) const override {
    KnobSpace s;
    s.knobs.push_back(conv_detail::ukernel_knob(isa));
    s.knobs.push_back(
        {"mc", {16, 32, 64, 128, 256, 4096}, "output channels per block (rounded up to MR)"});
    s.knobs.push_back({"kc", {64, 128, 256, 512, 1024, 8192}, "reduction rows per block"});
    s.knobs.push_back(
        {"nc", {64, 128, 256, 512, 1024, 4096}, "output pixels per block (rounded up to NR)"});
    s.knobs.push_back({"loop_order", {0, 1}, "0: pixel panels outer; 1: channel panels outer"});
    s.knobs.push_back({"parallel", {0, 1}, "0: threads split pixel blocks; 1: output channels"});
    return s;
  }

  Knobs default_knobs(const ConvProblem& p, Isa isa) const override {
    // A 256-row x 256-pixel B block (256 KiB) sits in a 512 KiB+ L2 next to the A block;
    // pixel-parallel unless the layer has too few pixel blocks to share.
    const int64_t nblocks = p.n * p.groups * div_up(p.oh() * p.ow(), 256);
    return {{"ukernel", 0}, {"mc", 4096},      {"kc", 256},
            {"nc", 256},    {"loop_order", 0}, {"parallel", nblocks >= 4 ? 0 : 1}};
  }

  std::unique_ptr<PreparedConv> prepare(const ConvProblem& p, const float* weights,
                                        const float* bias, const Knobs& knobs,
                                        Isa isa) const override {
    p.validate();
    knob_space(p, isa).validate(knobs, "gemm conv " + p.key());
    return std::make_unique<PreparedGemmConv>(p, weights, bias, knobs, isa);
  }
};

}  // namespace

const ConvAlgorithm& gemm_conv_algorithm() {
  static const GemmConvAlgorithm algo;
  return algo;
}

}  // namespace dlas

// int8 `gemm` convolution: per image and group, Y[Kg][OH*OW] = requant(W[Kg][R] x B[R][OH*OW])
// with R = C/g*KH*KW, on the qs8 GEMM microkernels (microkernels/qs8-gemm/qs8_gemm.h): output
// channels are the tile rows, pixels the vector lanes, so each stored row is a run of one
// NCHW output plane, requantized (+ clamp + residual) in the microkernel's store.
//
// B is im2col'ed per block of nc pixels into NR-pixel panels of 4-byte reduction groups
// ([kq][NR][4]: u8 quads for vpdpbusd / AMX / scalar, s16 pairs for the pmaddwd paths),
// s8 activations shifted to u8 (x ^ 0x80) and padding filled with the stored zero point
// (the row copies and interleaves are the qs8-pack kernels of the microkernel's path);
// weights are packed once into MR-channel panels, and bias and the zero-point correction
// fold into one int32 per channel (qconv_common.h).
//
// Knobs:
//   ukernel     which microkernel (tile MR x NR, ISA path)
//   nc          pixels per packed block (rounded up to NR)
//   loop_order  0: channel panels outer (the A panel stays in L1); 1: pixel panels outer
//   parallel    0: threads split pixel blocks (each packs its own B);
//               1: threads pack one shared block (split over reduction groups), then split
//                  its output-channel panels
#include <cstring>
#include <memory>
#include <vector>

#include "algo/conv/gemm_common.h"
#include "algo/conv/qs8_common.h"
#include "algo/microkernels/qs8-pack/qs8_pack.h"
#include "dlas/core/error.h"
#include "dlas/hw/amx.h"
#include "dlas/hw/thread_pool.h"

namespace dlas {
namespace {

using conv_detail::chunk_range;
using conv_detail::div_up;
using conv_detail::round_up;
using ukernel::QS8GemmUkernel;

int64_t round64(int64_t bytes) { return round_up(bytes, 64); }

class PreparedGemmQConv final : public qconv_detail::PreparedInt8Conv {
 public:
  PreparedGemmQConv(const ConvProblem& p, const int8_t* w, const float* w_scale,
                    const int32_t* bias, const Knobs& kn, const QS8GemmUkernel& uk)
      : p_(p), uk_(uk), pack_(ukernel::qs8_pack_for(uk.isa)) {
    const ConvProblem& c = p;
    mr_ = uk.mr, nr_ = uk.nr, kr_ = uk.kr;
    kg_ = c.k_per_group(), cg_ = c.c_per_group();
    r_ = cg_ * c.kh * c.kw;
    ohw_ = c.oh() * c.ow();
    kq_ = round_up(div_up(r_, kr_), uk.kb);
    panels_ = div_up(kg_, mr_);
    panel_bytes_ = kq_ * mr_ * 4;
    nc_ = round_up(kn.at("nc"), nr_);
    if (nc_ > round_up(ohw_, nr_)) nc_ = round_up(ohw_, nr_);
    loop_order_ = kn.at("loop_order");
    by_channels_ = kn.at("parallel") == 1;
    xzp_ = static_cast<uint8_t>(qconv_detail::stored_zero_point(p.quant.x));
    x_signed_ = p.quant.x.type == DType::kS8;
    // Weights: [g][panel][kq / KB][MR][KB][4 bytes]; channels past Kg and groups past R zero.
    wpack_.assign(static_cast<size_t>(c.groups * panels_ * panel_bytes_), 0);
    const qconv_detail::ChannelTerms terms = qconv_detail::channel_terms(p, w, w_scale, bias);
    init_.assign(static_cast<size_t>(c.groups * panels_ * mr_), 0);
    mult_.assign(init_.size(), 0.f);
    for (int64_t g = 0; g < c.groups; ++g)
      for (int64_t panel = 0; panel < panels_; ++panel) {
        const int64_t j0 = panel * mr_, m = kg_ - j0 < mr_ ? kg_ - j0 : mr_;
        uk.pack(static_cast<size_t>(mr_), static_cast<size_t>(m), static_cast<size_t>(r_),
                w + (g * kg_ + j0) * r_, static_cast<size_t>(r_),
                wpack_.data() + (g * panels_ + panel) * panel_bytes_);
      }
    for (int64_t g = 0; g < c.groups; ++g)
      for (int64_t j = 0; j < kg_; ++j) {
        const int64_t panel = j / mr_, i = j % mr_;
        init_[(g * panels_ + panel) * mr_ + i] = terms.init[g * kg_ + j];
        mult_[(g * panels_ + panel) * mr_ + i] = terms.mult[g * kg_ + j];
      }
    taps_ = conv_detail::conv_taps(c);
    base_ = qconv_detail::base_params(p);
    // A 1x1 stride-1 unpadded conv's im2col rows are the input planes themselves: whole
    // pixel panels are shuffled straight from them. Channels past C/g read a row of the
    // zero point (their weights are zero, so any bytes would do; this keeps them defined).
    plain_ = c.kh == 1 && c.kw == 1 && c.stride_h == 1 && c.stride_w == 1 && c.pad_t == 0 &&
             c.pad_l == 0 && c.pad_b == 0 && c.pad_r == 0;
    zp_row_.assign(static_cast<size_t>(nr_), static_cast<uint8_t>(xzp_ ^ (x_signed_ ? 0x80 : 0)));
  }

  size_t workspace_bytes(int threads) const override {
    const int64_t slots = by_channels_ ? 1 : threads;
    return static_cast<size_t>(slots * block_bytes() + threads * rows_bytes());
  }
  size_t packed_bytes() const override {
    return wpack_.size() + init_.size() * sizeof(int32_t) + mult_.size() * sizeof(float);
  }
  ConvCompute compute() const override {
    return uk_.isa == Isa::kAmx ? ConvCompute::kAmxInt8 : ConvCompute::kInt8;
  }

  void run(const void* x, void* y, const void* residual, void* workspace,
           ThreadPool& pool) const override {
    uint8_t* ws = static_cast<uint8_t*>(workspace);
    const int64_t threads = pool.threads();
    const ConvProblem& c = p_;
    const int64_t nblocks = div_up(ohw_, nc_), images = c.n * c.groups;
    uint8_t* rows_base = ws + (by_channels_ ? 1 : threads) * block_bytes();
    if (!by_channels_) {
      const int64_t items = images * nblocks;
      if (images % threads == 0 || items >= 8 * threads) {
        // Whole nc-pixel blocks, a contiguous run of them per thread.
        pool.parallel_for(static_cast<size_t>(threads), [&](size_t t) {
          int64_t b, e;
          chunk_range(items, threads, static_cast<int64_t>(t), &b, &e);
          uint8_t* blk = ws + static_cast<int64_t>(t) * block_bytes();
          uint8_t* rows = rows_base + static_cast<int64_t>(t) * rows_bytes();
          for (int64_t it = b; it < e; ++it) {
            const int64_t p0 = it % nblocks * nc_, ng = it / nblocks;
            const int64_t ncols = ohw_ - p0 < nc_ ? ohw_ - p0 : nc_;
            pack(x, ng / c.groups, ng % c.groups, p0, ncols, 0, kq_, blk, rows);
            compute(y, residual, ng / c.groups, ng % c.groups, p0, ncols, 0, panels_, blk);
          }
        });
      } else {
        // Few images: every thread takes an equal run of each image's pixel panels, in
        // nc-pixel steps (whole blocks would leave a thread idle on one small image).
        const int64_t ppanels = div_up(ohw_, nr_);
        pool.parallel_for(static_cast<size_t>(threads), [&](size_t t) {
          int64_t b, e;
          chunk_range(ppanels, threads, static_cast<int64_t>(t), &b, &e);
          uint8_t* blk = ws + static_cast<int64_t>(t) * block_bytes();
          uint8_t* rows = rows_base + static_cast<int64_t>(t) * rows_bytes();
          const int64_t q1 = e * nr_ < ohw_ ? e * nr_ : ohw_;
          for (int64_t ng = 0; ng < images; ++ng)
            for (int64_t q = b * nr_; q < q1; q += nc_) {
              const int64_t ncols = q1 - q < nc_ ? q1 - q : nc_;
              pack(x, ng / c.groups, ng % c.groups, q, ncols, 0, kq_, blk, rows);
              compute(y, residual, ng / c.groups, ng % c.groups, q, ncols, 0, panels_, blk);
            }
        });
      }
      return;
    }
    // Per block, two phases in one loop: the shared block packed (split over reduction
    // groups), then the output-channel panels (split over threads); the second barrier
    // keeps the next block's pack off the block still being read.
    pool.parallel_phases([&](size_t t, auto sync) {
      for (int64_t ng = 0; ng < images; ++ng)
        for (int64_t nb = 0; nb < nblocks; ++nb) {
          const int64_t n = ng / c.groups, g = ng % c.groups, p0 = nb * nc_;
          const int64_t ncols = ohw_ - p0 < nc_ ? ohw_ - p0 : nc_;
          int64_t b, e;
          chunk_range(kq_, threads, static_cast<int64_t>(t), &b, &e);
          pack(x, n, g, p0, ncols, b, e, ws, rows_base + static_cast<int64_t>(t) * rows_bytes());
          sync();
          chunk_range(panels_, threads, static_cast<int64_t>(t), &b, &e);
          if (b < e) compute(y, residual, n, g, p0, ncols, b, e, ws);
          sync();
        }
    });
  }

 private:
  int64_t block_bytes() const { return round64(nc_ * kq_ * 4); }
  int64_t rows_bytes() const { return round64(kr_ * nc_); }

  // Row `rr` of the im2col matrix over pixels [p0, p0 + ncols) of image n, group g, as
  // stored bytes (u8, or s8 ^ 0x80), padding = the stored zero point.
  void fill_row(const uint8_t* x, int64_t n, int64_t g, int64_t rr,
                const conv_detail::PixelSegment* segs, int nsegs, int64_t ncols,
                uint8_t* row) const {
    const ConvProblem& c = p_;
    if (rr >= r_) {
      std::memset(row, xzp_, static_cast<size_t>(ncols));
      return;
    }
    const uint8_t flip = x_signed_ ? 0x80 : 0;
    conv_detail::im2col_row(
        c, taps_[rr], x + (n * c.c + g * cg_) * c.h * c.w, segs, nsegs, row,
        [&](const uint8_t* src, int64_t sw, int64_t count, uint8_t* dst) {
          pack_.copy(src, static_cast<size_t>(sw), static_cast<size_t>(count), flip, dst);
        },
        [&](uint8_t* dst, int64_t count) { std::memset(dst, xzp_, static_cast<size_t>(count)); });
  }

  // Groups [q0, q1) of the block's panels: blk + (panel * kq + q) * NR * 4.
  void pack(const void* x, int64_t n, int64_t g, int64_t p0, int64_t ncols, int64_t q0, int64_t q1,
            uint8_t* blk, uint8_t* rows) const {
    const int64_t npan = div_up(ncols, nr_), width = npan * nr_;
    const uint8_t* xb = static_cast<const uint8_t*>(x);
    int nsegs = 0;
    const conv_detail::PixelSegment* segs =
        conv_detail::block_segments(p0, p0 + ncols, p_.ow(), &nsegs);
    const int64_t whole = plain_ ? ncols / nr_ : 0;  // panels read straight from the planes
    const uint8_t flip = x_signed_ ? 0x80 : 0;
    const uint8_t* planes = xb + (n * p_.c + g * cg_) * p_.h * p_.w + p0;
    for (int64_t q = q0; q < q1; ++q) {
      for (int64_t pp = 0; pp < whole; ++pp) {
        const uint8_t* r[4];
        for (int64_t e = 0; e < 4; ++e) {
          const int64_t rr = q * kr_ + (e < kr_ ? e : 0);
          r[e] = rr < r_ ? planes + rr * p_.h * p_.w + pp * nr_ : zp_row_.data();
        }
        (kr_ == 4 ? pack_.quads : pack_.pairs)(r, static_cast<size_t>(nr_), flip,
                                               blk + (pp * kq_ + q) * nr_ * 4);
      }
      if (whole == npan) continue;
      for (int64_t e = 0; e < kr_; ++e) {
        uint8_t* row = rows + e * nc_;
        fill_row(xb, n, g, q * kr_ + e, segs, nsegs, ncols, row);
        if (width > ncols) std::memset(row + ncols, xzp_, static_cast<size_t>(width - ncols));
      }
      for (int64_t pp = whole; pp < npan; ++pp) {
        uint8_t* dst = blk + (pp * kq_ + q) * nr_ * 4;
        const int64_t o = pp * nr_;
        const uint8_t* r[4] = {rows + o, rows + nc_ + o, rows + 2 * nc_ + o, rows + 3 * nc_ + o};
        (kr_ == 4 ? pack_.quads : pack_.pairs)(r, static_cast<size_t>(nr_), 0, dst);
      }
    }
  }

  void compute(void* y, const void* residual, int64_t n, int64_t g, int64_t p0, int64_t ncols,
               int64_t cp0, int64_t cp1, const uint8_t* blk) const {
    const ConvProblem& c = p_;
    const int64_t npan = div_up(ncols, nr_);
    auto call = [&](int64_t cp, int64_t pp) {
      const int64_t m = kg_ - cp * mr_ < mr_ ? kg_ - cp * mr_ : mr_;
      const int64_t nn = ncols - pp * nr_ < nr_ ? ncols - pp * nr_ : nr_;
      const int64_t yoff = (n * c.k + g * kg_ + cp * mr_) * ohw_ + p0 + pp * nr_;
      ukernel::QS8GemmParams prm = base_;
      prm.init = init_.data() + (g * panels_ + cp) * mr_;
      prm.mult = mult_.data() + (g * panels_ + cp) * mr_;
      prm.residual = residual ? static_cast<const uint8_t*>(residual) + yoff : nullptr;
      uk_.fn(static_cast<size_t>(m), static_cast<size_t>(nn), static_cast<size_t>(kq_),
             wpack_.data() + (g * panels_ + cp) * panel_bytes_, blk + pp * kq_ * nr_ * 4,
             static_cast<uint8_t*>(y) + yoff, static_cast<size_t>(ohw_), prm);
    };
    if (loop_order_ == 0) {
      for (int64_t cp = cp0; cp < cp1; ++cp)
        for (int64_t pp = 0; pp < npan; ++pp) call(cp, pp);
    } else {
      for (int64_t pp = 0; pp < npan; ++pp)
        for (int64_t cp = cp0; cp < cp1; ++cp) call(cp, pp);
    }
  }

  ConvProblem p_;
  const QS8GemmUkernel& uk_;
  const ukernel::QS8PackUkernels& pack_;  // the im2col shuffles of uk's path
  int64_t mr_, nr_, kr_, kg_, cg_, r_, ohw_, kq_, panels_, panel_bytes_, nc_, loop_order_;
  bool by_channels_, x_signed_, plain_ = false;
  uint8_t xzp_;
  std::vector<uint8_t> zp_row_;  // plain_: nr_ bytes of the zero point before the flip
  std::vector<uint8_t> wpack_;
  std::vector<int32_t> init_;
  std::vector<float> mult_;
  std::vector<conv_detail::ConvTap> taps_;
  ukernel::QS8GemmParams base_;
};

// Conv candidates on `isa`: the knob's index order (highest path first).
std::vector<const QS8GemmUkernel*> candidates(Isa isa) {
  return ukernel::qs8_gemm_ukernels_for(isa);
}

class GemmQConvAlgorithm final : public ConvAlgorithm {
 public:
  std::string_view name() const override { return "gemm"; }
  bool supports(const ConvProblem& p) const override { return !p.is_blocked(); }
  KnobSpace knob_space(const ConvProblem&, Isa isa) const override {
    KnobSpace s;
    KnobSpec uk{"ukernel", {}, "microkernel:"};
    const auto all = candidates(isa);
    for (size_t i = 0; i < all.size(); ++i) {
      uk.values.push_back(static_cast<int64_t>(i));
      uk.doc += " " + std::to_string(i) + "=" + all[i]->name;
    }
    s.knobs.push_back(uk);
    s.knobs.push_back({"nc",
                       {32, 64, 128, 256, 512, 1024, 4096},
                       "output pixels per packed block (rounded up to NR)"});
    s.knobs.push_back({"loop_order", {0, 1}, "0: channel panels outer; 1: pixel panels outer"});
    s.knobs.push_back(
        {"parallel", {0, 1}, "0: threads split pixel blocks; 1: output channels of one block"});
    return s;
  }
  Knobs default_knobs(const ConvProblem& p, Isa isa) const override {
    // The packed block (nc pixels x R bytes) within ~128 KiB, so it stays in L2 next to the
    // weights while every channel panel sweeps it; threads split output channels when
    // there are too few pixels for two threads (the f32 gemm's rule).
    const int64_t r = p.c_per_group() * p.kh * p.kw;
    int64_t nc = 32;
    for (int64_t v : {64, 128, 256, 512, 1024})
      if (v * r <= 128 * 1024) nc = v;
    const int64_t ohw = p.oh() * p.ow();
    return {{"ukernel", 0}, {"nc", nc}, {"loop_order", 0}, {"parallel", ohw < 64 ? 1 : 0}};
  }
  std::unique_ptr<PreparedConv> prepare(const ConvProblem& p, const ConvWeights& w,
                                        const Knobs& knobs, Isa isa) const override {
    p.validate();
    knob_space(p, isa).validate(knobs, "int8 gemm conv " + p.key());
    return qconv_detail::prepare_gemm_qconv(p, w, knobs, *candidates(isa)[knobs.at("ukernel")]);
  }
};

}  // namespace

namespace qconv_detail {

std::unique_ptr<PreparedConv> prepare_gemm_qconv(const ConvProblem& p, const ConvWeights& w,
                                                 const Knobs& knobs,
                                                 const ukernel::QS8GemmUkernel& uk) {
  p.validate();
  if (uk.isa == Isa::kAmx) amx_require("int8 gemm conv (AMX)");
  return std::make_unique<PreparedGemmQConv>(p, w.int8_data(), w.w_scale, w.bias_s32, knobs, uk);
}

}  // namespace qconv_detail

const ConvAlgorithm& gemm_qconv_algorithm() {
  static const GemmQConvAlgorithm algo;
  return algo;
}

}  // namespace dlas

// int8 `depthwise` convolution (groups == C, one input channel per group, any channel
// multiplier, kernel size, stride, dilation). Threads split the (image, input channel)
// items into `threads` contiguous runs; one kernel call (microkernels/qs8-dwconv/
// qs8_dwconv.h) computes an item's `mult` output planes row by row: the input rows are
// turned into int16 pair rows (x - x.zero_point, padding 0) in a small ring just before
// use, two horizontal taps per vpmaddwd with output pixels as lanes, and the requantization
// (+ clamp + residual) fused into the store. Each thread owns one task buffer in the
// workspace, zeroed once per run.
//
// Small planes take the channels-as-lanes kernels instead (microkernels/qs8-dwchan/
// qs8_dwchan.h, knob lanes=1): a task is (image, block of `lanes` channels, band of output
// rows), the rows transposed in and out of channel lanes, so a 4x4 plane costs a few
// instructions per channel instead of a kernel call's setup. Blocked activations (nchw16c /
// nchw8c, the block the kernel's lanes) run those kernels with no transposes -- or, with u8
// input on 16-channel blocks (stride <= 2, no dilation, rows of <= 8 taps, AVX512-VNNI), the
// quad kernels (microkernels/qs8-dwquad/qs8_dwquad.h): a staged row of each channel's
// four-pixel byte quads, three or four taps per vpdpbusd. On a path whose lanes are not the
// block, the NCHW conv between reorders.
#include <algorithm>
#include <cstring>
#include <memory>
#include <vector>

#include "algo/conv/gemm_common.h"
#include "algo/conv/qs8_common.h"
#include "algo/microkernels/qs8-dwchan/qs8_dwchan.h"
#include "algo/microkernels/qs8-dwconv/qs8_dwconv.h"
#include "algo/microkernels/qs8-dwquad/qs8_dwquad.h"
#include "dlas/core/error.h"
#include "dlas/hw/thread_pool.h"

namespace dlas {
namespace {

using conv_detail::chunk_range;
using conv_detail::round_up;

// The problem's geometry and input type, shared by both kernel families' configs.
template <class Config>
void set_geometry(Config& g, const ConvProblem& c) {
  g.h = c.h, g.w = c.w, g.pad_t = c.pad_t, g.pad_l = c.pad_l, g.oh = c.oh(), g.ow = c.ow();
  g.kh = static_cast<int>(c.kh), g.kw = static_cast<int>(c.kw);
  g.sh = static_cast<int>(c.stride_h), g.sw = static_cast<int>(c.stride_w);
  g.dh = static_cast<int>(c.dil_h), g.dw = static_cast<int>(c.dil_w);
  g.x_signed = c.quant.x.type == DType::kS8;
  g.x_zp = c.quant.x.zero_point;
}

class PreparedDepthwiseQConv final : public qconv_detail::PreparedInt8Conv {
 public:
  PreparedDepthwiseQConv(const ConvProblem& p, const int8_t* w, const float* w_scale,
                         const int32_t* bias, ukernel::QS8DwFn fn)
      : p_(p), fn_(fn) {
    const ConvProblem& c = p;
    const qconv_detail::ChannelTerms terms = qconv_detail::channel_terms(p, w, w_scale, nullptr);
    mult_ = terms.mult;
    bias_.assign(static_cast<size_t>(c.k), 0);
    if (bias) bias_.assign(bias, bias + c.k);
    // Weight pairs [k][kh][kwp]: (w[ky][2t], w[ky][2t + 1] or 0) as int16, the even tap low.
    const int64_t kwp = (c.kw + 1) / 2;
    wp_.assign(static_cast<size_t>(c.k * c.kh * kwp), 0);
    for (int64_t k = 0; k < c.k; ++k)
      for (int64_t ky = 0; ky < c.kh; ++ky)
        for (int64_t t = 0; t < kwp; ++t) {
          const int8_t* row = w + (k * c.kh + ky) * c.kw;
          const int16_t pair[2] = {row[2 * t], 2 * t + 1 < c.kw ? row[2 * t + 1] : int8_t{0}};
          std::memcpy(&wp_[static_cast<size_t>((k * c.kh + ky) * kwp + t)], pair, 4);
        }
    set_geometry(g_, p);
    g_.mult = static_cast<int>(c.k_per_group());
    ukernel::qs8_dwconv_config(g_);
    buf_elems_ = round_up(ukernel::qs8_dwconv_buffer_elems(g_), 64);
    base_ = qconv_detail::base_params(p);
  }
  size_t workspace_bytes(int threads) const override {
    return static_cast<size_t>(threads * buf_elems_) * sizeof(int16_t);
  }
  size_t packed_bytes() const override {
    return wp_.size() * sizeof(int32_t) + bias_.size() * 4 + mult_.size() * 4;
  }
  void run(const void* x, void* y, const void* residual, void* workspace,
           ThreadPool& pool) const override {
    const ConvProblem& c = p_;
    const int64_t threads = pool.threads(), items = c.n * c.c, mult = c.k_per_group();
    const int64_t ohw = c.oh() * c.ow(), hw = c.h * c.w;
    const int64_t taps = c.kh * g_.kwp;
    pool.parallel_for(static_cast<size_t>(threads), [&](size_t th) {
      int64_t b, e;
      chunk_range(items, threads, static_cast<int64_t>(th), &b, &e);
      if (b >= e) return;
      int16_t* buf = static_cast<int16_t*>(workspace) + static_cast<int64_t>(th) * buf_elems_;
      // Padding and slack stay 0; each task overwrites what it reads.
      std::memset(buf, 0, static_cast<size_t>(buf_elems_) * sizeof(int16_t));
      ukernel::QS8DwTask t{};
      t.buf = buf;
      for (int64_t it = b; it < e; ++it) {
        const int64_t n = it / c.c, ci = it % c.c, k = ci * mult;
        const int64_t yoff = (n * c.k + k) * ohw;
        t.x = static_cast<const uint8_t*>(x) + it * hw;
        t.w = wp_.data() + k * taps;
        t.bias = bias_.data() + k;
        t.m = mult_.data() + k;
        t.residual = residual ? static_cast<const uint8_t*>(residual) + yoff : nullptr;
        t.y = static_cast<uint8_t*>(y) + yoff;
        fn_(g_, t, base_);
      }
    });
  }

 private:
  ConvProblem p_;
  ukernel::QS8DwFn fn_;
  std::vector<int32_t> wp_, bias_;
  std::vector<float> mult_;
  ukernel::QS8DwConfig g_;
  int64_t buf_elems_;
  ukernel::QS8GemmParams base_;
};

// Channels as lanes (knob lanes=1).
class PreparedDwChanQConv final : public qconv_detail::PreparedInt8Conv {
 public:
  PreparedDwChanQConv(const ConvProblem& p, const int8_t* w, const float* w_scale,
                      const int32_t* bias, const ukernel::QS8DwChanUkernel& uk)
      : p_(p), uk_(uk) {
    const ConvProblem& c = p;
    const int64_t L = uk.lanes, taps = c.kh * c.kw;
    blocks_ = (c.c + L - 1) / L;
    const qconv_detail::ChannelTerms terms = qconv_detail::channel_terms(p, w, w_scale, nullptr);
    // Per block: weights [taps][L] (floats), bias, mult.
    wl_.assign(static_cast<size_t>(blocks_ * taps * L), 0.f);
    bias_.assign(static_cast<size_t>(blocks_ * L), 0);
    mult_.assign(static_cast<size_t>(blocks_ * L), 0.f);
    // The kernel stages x as stored and pads with x's zero point: the bias absorbs
    // -x_zp * sum(w) (int32 wraparound, like the sums).
    const int64_t x_zp = p.quant.x.zero_point;
    for (int64_t k = 0; k < c.k; ++k) {
      const int64_t b = k / L, l = k % L;
      int64_t sum = 0;
      for (int64_t t = 0; t < taps; ++t) {
        wl_[static_cast<size_t>((b * taps + t) * L + l)] = static_cast<float>(w[k * taps + t]);
        sum += w[k * taps + t];
      }
      bias_[static_cast<size_t>(k)] = static_cast<int32_t>(
          static_cast<uint32_t>(bias ? bias[k] : 0) - static_cast<uint32_t>(x_zp * sum));
      mult_[static_cast<size_t>(k)] = terms.mult[static_cast<size_t>(k)];
    }
    set_geometry(g_, p);
    g_.lanes = uk.lanes;
    g_.blocked = p.is_blocked();
    ukernel::qs8_dwchan_config(g_, kStagingBytes);
    bands_ = (g_.oh + g_.band - 1) / g_.band;
    buf_elems_ = round_up(ukernel::qs8_dwchan_buffer_elems(g_), 16);
    base_ = qconv_detail::base_params(p);
  }
  size_t workspace_bytes(int threads) const override {
    return static_cast<size_t>(threads * buf_elems_) * sizeof(int32_t);
  }
  size_t packed_bytes() const override {
    return wl_.size() * sizeof(float) + bias_.size() * 4 + mult_.size() * 4;
  }
  void run(const void* x, void* y, const void* residual, void* workspace,
           ThreadPool& pool) const override {
    const ConvProblem& c = p_;
    const int64_t threads = pool.threads(), L = uk_.lanes, taps = c.kh * c.kw;
    const int64_t items = c.n * blocks_ * bands_;
    const int64_t ohw = c.oh() * c.ow(), hw = c.h * c.w;
    pool.parallel_for(static_cast<size_t>(threads), [&](size_t th) {
      int64_t b, e;
      chunk_range(items, threads, static_cast<int64_t>(th), &b, &e);
      if (b >= e) return;
      ukernel::QS8DwChanTask t{};
      t.buf = static_cast<int32_t*>(workspace) + static_cast<int64_t>(th) * buf_elems_;
      std::memset(t.buf, 0, static_cast<size_t>(buf_elems_) * sizeof(int32_t));
      for (int64_t it = b; it < e; ++it) {
        const int64_t band = it % bands_, blk = it / bands_ % blocks_, n = it / bands_ / blocks_;
        const int64_t c0 = blk * L;
        t.channels = static_cast<int>(std::min(L, c.c - c0));
        t.oy0 = band * g_.band;
        t.oy1 = std::min(g_.oh, t.oy0 + g_.band);
        // A block's planes: L NCHW planes, or its [h][w][L] pixels.
        const int64_t block = n * blocks_ + blk;
        t.x = static_cast<const uint8_t*>(x) + (g_.blocked ? block * hw * L : (n * c.c + c0) * hw);
        t.w = wl_.data() + blk * taps * L;
        t.bias = bias_.data() + blk * L;
        t.m = mult_.data() + blk * L;
        const int64_t yoff = g_.blocked ? block * ohw * L : (n * c.k + c0) * ohw;
        t.residual = residual ? static_cast<const uint8_t*>(residual) + yoff : nullptr;
        t.y = static_cast<uint8_t*>(y) + yoff;
        uk_.fn(g_, t, base_);
      }
    });
  }

 private:
  // A band's staging buffer: L2-resident, long enough bands that the rows two bands share
  // (kh - sh of them) are a small part of the staging.
  static constexpr int64_t kStagingBytes = 96 * 1024;
  ConvProblem p_;
  const ukernel::QS8DwChanUkernel& uk_;
  int64_t blocks_ = 0, bands_ = 0, buf_elems_ = 0;
  std::vector<float> wl_;
  std::vector<int32_t> bias_;
  std::vector<float> mult_;
  ukernel::QS8DwChanConfig g_;
  ukernel::QS8GemmParams base_;
};

// On 8-bit blocks with u8 input: the quad kernels (qs8-dwquad), three or four taps per
// vpdpbusd.
class PreparedDwQuadQConv final : public qconv_detail::PreparedInt8Conv {
 public:
  PreparedDwQuadQConv(const ConvProblem& p, const int8_t* w, const float* w_scale,
                      const int32_t* bias, const ukernel::QS8DwQuadUkernel& uk)
      : p_(p), uk_(uk) {
    const ConvProblem& c = p;
    constexpr int64_t L = 16;
    blocks_ = (c.c + L - 1) / L;
    g_.h = c.h, g_.w = c.w, g_.pad_t = c.pad_t, g_.pad_l = c.pad_l, g_.oh = c.oh(), g_.ow = c.ow();
    g_.kh = static_cast<int>(c.kh), g_.kw = static_cast<int>(c.kw);
    g_.sh = static_cast<int>(c.stride_h), g_.sw = static_cast<int>(c.stride_w);
    g_.x_zp = c.quant.x.zero_point;
    ukernel::qs8_dwquad_config(g_, kStagingBytes);
    bands_ = (g_.oh + g_.band - 1) / g_.band;
    buf_bytes_ = round_up(ukernel::qs8_dwquad_buffer_bytes(g_), 64);
    const qconv_detail::ChannelTerms terms = qconv_detail::channel_terms(p, w, w_scale, bias);
    // Per block: weights [kh][nq][16 lanes][4 taps] (0 past kw and C), init, mult.
    const int64_t nq = g_.nq, taps = c.kh * c.kw;
    wq_.assign(static_cast<size_t>(blocks_ * c.kh * nq * L), 0);
    init_.assign(static_cast<size_t>(blocks_ * L), 0);
    mult_.assign(static_cast<size_t>(blocks_ * L), 0.f);
    for (int64_t k = 0; k < c.k; ++k) {
      const int64_t b = k / L, l = k % L;
      for (int64_t ky = 0; ky < c.kh; ++ky)
        for (int64_t kx = 0; kx < c.kw; ++kx) {
          uint8_t* dst = reinterpret_cast<uint8_t*>(
              &wq_[static_cast<size_t>(((b * c.kh + ky) * nq + kx / 4) * L + l)]);
          dst[kx % 4] = static_cast<uint8_t>(w[k * taps + ky * c.kw + kx]);
        }
      init_[static_cast<size_t>(k)] = terms.init[static_cast<size_t>(k)];
      mult_[static_cast<size_t>(k)] = terms.mult[static_cast<size_t>(k)];
    }
    base_ = qconv_detail::base_params(p);
  }
  size_t workspace_bytes(int threads) const override {
    return static_cast<size_t>(threads * buf_bytes_);
  }
  size_t packed_bytes() const override {
    return (wq_.size() + init_.size()) * sizeof(int32_t) + mult_.size() * sizeof(float);
  }
  void run(const void* x, void* y, const void* residual, void* workspace,
           ThreadPool& pool) const override {
    const ConvProblem& c = p_;
    constexpr int64_t L = 16;
    const int64_t threads = pool.threads(), items = c.n * blocks_ * bands_;
    const int64_t ohw = c.oh() * c.ow(), hw = c.h * c.w, wblock = c.kh * g_.nq * L;
    pool.parallel_for(static_cast<size_t>(threads), [&](size_t th) {
      int64_t b, e;
      chunk_range(items, threads, static_cast<int64_t>(th), &b, &e);
      ukernel::QS8DwQuadTask t{};
      t.buf = static_cast<uint8_t*>(workspace) + static_cast<int64_t>(th) * buf_bytes_;
      for (int64_t it = b; it < e; ++it) {
        const int64_t band = it % bands_, block = it / bands_;  // block: image * blocks_ + blk
        const int64_t blk = block % blocks_;
        t.oy0 = band * g_.band;
        t.oy1 = std::min(g_.oh, t.oy0 + g_.band);
        t.x = static_cast<const uint8_t*>(x) + block * hw * L;
        t.w = wq_.data() + blk * wblock;
        t.bias = init_.data() + blk * L;
        t.m = mult_.data() + blk * L;
        t.residual = residual ? static_cast<const uint8_t*>(residual) + block * ohw * L : nullptr;
        t.y = static_cast<uint8_t*>(y) + block * ohw * L;
        uk_.fn(g_, t, base_);
      }
    });
  }

 private:
  // A band's quad rows: L2-resident, as the channels-as-lanes staging.
  static constexpr int64_t kStagingBytes = 96 * 1024;
  ConvProblem p_;
  const ukernel::QS8DwQuadUkernel& uk_;
  ukernel::QS8DwQuadConfig g_;
  int64_t blocks_ = 0, bands_ = 0, buf_bytes_ = 0;
  std::vector<int32_t> wq_, init_;
  std::vector<float> mult_;
  ukernel::QS8GemmParams base_;
};

bool is_depthwise(const ConvProblem& c) {
  return c.groups == c.c && c.groups > 1 && c.k % c.groups == 0;
}

// The channels-as-lanes kernel covers multiplier 1 and up to 64 taps; on blocked
// activations, only with lanes that are the block.
const ukernel::QS8DwChanUkernel* chan_kernel(const ConvProblem& p, Isa isa) {
  if (p.k != p.c || p.kh * p.kw > 64) return nullptr;
  const ukernel::QS8DwChanUkernel* uk = ukernel::qs8_dwchan_for(isa);
  if (uk && p.is_blocked() && uk->lanes != layout_block(p.y_layout)) return nullptr;
  return uk;
}

// The quad kernels: u8 input on 16-channel blocks, stride 1 or 2, no dilation, rows of at
// most 8 taps, on a path that has them.
const ukernel::QS8DwQuadUkernel* quad_kernel(const ConvProblem& p, Isa isa) {
  if (p.k != p.c || p.quant.x.type != DType::kU8 || p.x_layout != Layout::kNchw16c ||
      p.y_layout != Layout::kNchw16c ||
      !ukernel::qs8_dwquad_covers(p.kw, p.stride_h, p.stride_w, p.dil_h, p.dil_w))
    return nullptr;
  return ukernel::qs8_dwquad_for(isa);
}

// Blocked depthwise: multiplier 1, at most 64 taps, input and output in one block.
bool blocked_supported(const ConvProblem& p) {
  return is_depthwise(p) && p.k == p.c && p.kh * p.kw <= 64 && p.x_layout == p.y_layout &&
         is_blocked(p.x_layout);
}

class DepthwiseQConvAlgorithm final : public ConvAlgorithm {
 public:
  std::string_view name() const override { return "depthwise"; }
  bool supports(const ConvProblem& p) const override {
    return p.is_blocked() ? blocked_supported(p) : is_depthwise(p);
  }
  KnobSpace knob_space(const ConvProblem& p, Isa isa) const override {
    KnobSpace s;
    if (p.is_blocked()) return s;  // channels as lanes: the block
    if (chan_kernel(p, isa))
      s.knobs.push_back({"lanes",
                         {0, 1},
                         "what the vector lanes hold: output pixels (one plane per call) or "
                         "channels (rows transposed in and out; small planes)",
                         {"pixels", "channels"}});
    return s;
  }
  Knobs default_knobs(const ConvProblem& p, Isa isa) const override {
    if (p.is_blocked() || !chan_kernel(p, isa)) return {};
    // Measured (dlas_bench_qconv, 1 thread, Sapphire Rapids-class): channels as lanes win
    // up to 28x28 input planes (1.1x at 28x28, 2-6x at 14x14 and below) and on 3x3 stride 2
    // at 56x56 (1.2x); pixels win at 56x56 otherwise (par to 1.3x) and at 112x112 (1.4-2.3x).
    const int64_t hw = p.h * p.w;
    const bool s2_3x3 = p.stride_h == 2 && p.stride_w == 2 && p.kh == 3 && p.kw == 3;
    return {{"lanes", hw <= 28 * 28 || (s2_3x3 && hw <= 56 * 56) ? 1 : 0}};
  }
  std::unique_ptr<PreparedConv> prepare(const ConvProblem& p, const ConvWeights& w,
                                        const Knobs& knobs, Isa isa) const override {
    if (p.is_blocked()) {
      p.validate();
      DLAS_CHECK(blocked_supported(p), ErrorKind::kUnsupported,
                 "int8 depthwise conv on blocks: ", p.key(),
                 " is not depthwise with multiplier 1 and at most 64 taps");
      knob_space(p, isa).validate(knobs, "int8 depthwise conv " + p.key());
      if (const ukernel::QS8DwQuadUkernel* uk = quad_kernel(p, isa))
        return std::make_unique<PreparedDwQuadQConv>(p, w.int8_data(), w.w_scale, w.bias_s32, *uk);
      if (const ukernel::QS8DwChanUkernel* uk = chan_kernel(p, isa))
        return qconv_detail::prepare_depthwise_qconv_chan(p, w, *uk);
      return qconv_detail::prepare_int8_via_nchw(p, w, isa);
    }
    const auto it = knobs.find("lanes");
    if (it != knobs.end() && it->second == 1 && chan_kernel(p, isa)) {
      knob_space(p, isa).validate(knobs, "int8 depthwise conv " + p.key());
      return qconv_detail::prepare_depthwise_qconv_chan(p, w, *chan_kernel(p, isa));
    }
    return qconv_detail::prepare_depthwise_qconv(p, w, knobs, ukernel::qs8_dwconv_for(isa));
  }
};

}  // namespace

namespace qconv_detail {

std::unique_ptr<PreparedConv> prepare_depthwise_qconv(const ConvProblem& p, const ConvWeights& w,
                                                      const Knobs& knobs, ukernel::QS8DwFn fn) {
  p.validate();
  DLAS_CHECK(is_depthwise(p), ErrorKind::kUnsupported, "int8 depthwise conv: ", p.key(),
             " is not depthwise");
  Knobs rest = knobs;
  rest.erase("lanes");
  KnobSpace{}.validate(rest, "int8 depthwise conv " + p.key());
  return std::make_unique<PreparedDepthwiseQConv>(p, w.int8_data(), w.w_scale, w.bias_s32, fn);
}

std::unique_ptr<PreparedConv> prepare_depthwise_qconv_chan(const ConvProblem& p,
                                                           const ConvWeights& w,
                                                           const ukernel::QS8DwChanUkernel& uk) {
  p.validate();
  DLAS_CHECK(is_depthwise(p) && p.k == p.c && p.kh * p.kw <= 64, ErrorKind::kUnsupported,
             "int8 depthwise conv (channels as lanes): ", p.key(),
             " is not depthwise with multiplier 1 and at most 64 taps");
  DLAS_CHECK(!p.is_blocked() || (p.x_layout == p.y_layout && layout_block(p.y_layout) == uk.lanes),
             ErrorKind::kUnsupported, "int8 depthwise conv (channels as lanes): ", p.key(),
             " is blocked by other than the kernel's ", uk.lanes, " lanes");
  return std::make_unique<PreparedDwChanQConv>(p, w.int8_data(), w.w_scale, w.bias_s32, uk);
}

}  // namespace qconv_detail

const ConvAlgorithm& depthwise_qconv_algorithm() {
  static const DepthwiseQConvAlgorithm algo;
  return algo;
}

}  // namespace dlas

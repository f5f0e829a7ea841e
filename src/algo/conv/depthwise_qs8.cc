// int8 `depthwise` convolution (groups == C, one input channel per group, any channel
// multiplier, kernel size, stride, dilation): per (image, input channel) the plane is
// copied once into a padded, stride-phase-split int16 buffer holding x - x.zero_point
// (padding 0: no zero-point correction), then each of its output channels runs the plane
// kernel (microkernels/qs8-dwconv/qs8_dwconv.h): int32 accumulation over the taps with output
// pixels as vector lanes, and the requantization (+ clamp + residual) fused into the store. Threads
// split (image, input channel) items into exactly `threads` chunks, each with its own plane buffer
// in the workspace.
#include <cstring>
#include <memory>
#include <vector>

#include "algo/conv/gemm_common.h"
#include "algo/conv/qs8_common.h"
#include "algo/microkernels/qs8-dwconv/qs8_dwconv.h"
#include "dlas/core/error.h"
#include "dlas/hw/thread_pool.h"

namespace dlas {
namespace {

using conv_detail::chunk_range;
using conv_detail::div_up;
using conv_detail::round_up;

// Widest vector of any kernel: every plane buffer row has this much read slack.
constexpr int64_t kMaxLanes = 16;

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
    w_.assign(w, w + c.weight_count());
    hp_ = c.h + c.pad_t + c.pad_b;
    const int64_t wpad = c.w + c.pad_l + c.pad_r;
    wq_ = div_up(wpad, c.stride_w);
    const int64_t need = round_up(c.ow(), kMaxLanes) + (c.kw - 1) * c.dil_w / c.stride_w;
    if (wq_ < need) wq_ = need;
    plane_elems_ = round_up(c.stride_w * hp_ * wq_, 32);
    base_ = qconv_detail::base_params(p);
  }
  size_t workspace_bytes(int threads) const override {
    return static_cast<size_t>(threads * plane_elems_) * sizeof(int16_t);
  }
  size_t packed_bytes() const override {
    return w_.size() * sizeof(int32_t) + bias_.size() * 4 + mult_.size() * 4;
  }
  void run(const void* x, void* y, const void* residual, void* workspace,
           ThreadPool& pool) const override {
    const ConvProblem& c = p_;
    const int64_t threads = pool.threads(), items = c.n * c.c, mult = c.k_per_group();
    const int64_t ohw = c.oh() * c.ow(), hw = c.h * c.w;
    pool.parallel_for(static_cast<size_t>(threads), [&](size_t t) {
      int64_t b, e;
      chunk_range(items, threads, static_cast<int64_t>(t), &b, &e);
      if (b >= e) return;
      int16_t* buf = static_cast<int16_t*>(workspace) + static_cast<int64_t>(t) * plane_elems_;
      // Padding and slack stay 0; each item overwrites the interior only.
      std::memset(buf, 0, static_cast<size_t>(plane_elems_) * sizeof(int16_t));
      ukernel::QS8DwPlane d{buf,
                            hp_,
                            wq_,
                            nullptr,
                            static_cast<int>(c.kh),
                            static_cast<int>(c.kw),
                            static_cast<int>(c.stride_h),
                            static_cast<int>(c.stride_w),
                            static_cast<int>(c.dil_h),
                            static_cast<int>(c.dil_w),
                            c.oh(),
                            c.ow()};
      for (int64_t it = b; it < e; ++it) {
        fill_plane(x, it * hw, buf);
        const int64_t n = it / c.c, ci = it % c.c;
        for (int64_t j = 0; j < mult; ++j) {
          const int64_t k = ci * mult + j;
          d.w = w_.data() + k * c.kh * c.kw;
          const int64_t yoff = (n * c.k + k) * ohw;
          fn_(d, bias_[k], mult_[k],
              residual ? static_cast<const uint8_t*>(residual) + yoff : nullptr,
              static_cast<uint8_t*>(y) + yoff, base_);
        }
      }
    });
  }

 private:
  void fill_plane(const void* x, int64_t off, int16_t* buf) const {
    const ConvProblem& c = p_;
    const int64_t sw = c.stride_w, zp = p_.quant.x.zero_point;
    const bool s8 = p_.quant.x.type == DType::kS8;
    for (int64_t iy = 0; iy < c.h; ++iy) {
      const int64_t row = iy + c.pad_t;
      if (sw == 1) {
        int16_t* dst = buf + row * wq_ + c.pad_l;
        if (s8) {
          const int8_t* src = static_cast<const int8_t*>(x) + off + iy * c.w;
          for (int64_t ix = 0; ix < c.w; ++ix) dst[ix] = static_cast<int16_t>(src[ix] - zp);
        } else {
          const uint8_t* src = static_cast<const uint8_t*>(x) + off + iy * c.w;
          for (int64_t ix = 0; ix < c.w; ++ix) dst[ix] = static_cast<int16_t>(src[ix] - zp);
        }
        continue;
      }
      for (int64_t ix = 0; ix < c.w; ++ix) {
        const int64_t px = ix + c.pad_l;
        const int32_t v = s8 ? static_cast<const int8_t*>(x)[off + iy * c.w + ix]
                             : static_cast<const uint8_t*>(x)[off + iy * c.w + ix];
        buf[((px % sw) * hp_ + row) * wq_ + px / sw] = static_cast<int16_t>(v - zp);
      }
    }
  }

  ConvProblem p_;
  ukernel::QS8DwFn fn_;
  std::vector<int32_t> w_, bias_;
  std::vector<float> mult_;
  int64_t hp_, wq_, plane_elems_;
  ukernel::QS8GemmParams base_;
};

bool is_depthwise(const ConvProblem& c) {
  return c.groups == c.c && c.groups > 1 && c.k % c.groups == 0;
}

class DepthwiseQConvAlgorithm final : public ConvAlgorithm {
 public:
  std::string_view name() const override { return "depthwise"; }
  bool supports(const ConvProblem& p) const override { return is_depthwise(p); }
  KnobSpace knob_space(const ConvProblem&, Isa) const override { return {}; }
  Knobs default_knobs(const ConvProblem&, Isa) const override { return {}; }
  std::unique_ptr<PreparedConv> prepare(const ConvProblem& p, const ConvWeights& w,
                                        const Knobs& knobs, Isa isa) const override {
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
  KnobSpace{}.validate(knobs, "int8 depthwise conv " + p.key());
  return std::make_unique<PreparedDepthwiseQConv>(p, w.int8_data(), w.w_scale, w.bias_s32, fn);
}

}  // namespace qconv_detail

const ConvAlgorithm& depthwise_qconv_algorithm() {
  static const DepthwiseQConvAlgorithm algo;
  return algo;
}

}  // namespace dlas

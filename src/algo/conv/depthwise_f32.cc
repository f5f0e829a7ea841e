// depthwise: each output plane depends on one input plane, so the algorithm is a loop
// over (image, input channel) planes (or over row ranges of every plane), each buffered
// once, zero-padded and phase-split, into per-thread scratch, then swept by the f32-dwconv
// microkernels: vectors along output W, a register block of output rows so each loaded
// input row vector is reused across the kernel rows that need it, and bias + residual +
// clamp fused into the store. All output channels of one input channel (multiplier > 1)
// reuse the same buffered plane. Other activations run through apply_epilogue over the
// freshly written (cache-hot) rows.
#include "algo/conv/depthwise_f32.h"
#include "algo/conv/conv_impl.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "dlas/core/aligned_vector.h"
#include "dlas/core/error.h"
#include "dlas/hw/thread_pool.h"

namespace dlas {
namespace {

constexpr int64_t kAxisChannel = 0, kAxisRows = 1;
constexpr int64_t kLayoutPlanes = 0, kLayoutChannelBlocked = 1;

// Default layout rule: channel-blocked when an output plane has at most this many pixels
// (32x32). Measured single-thread on Zen3 (AVX2), 3x3/5x5 MobileNet/EfficientNet layers:
// channel-blocked 1.7-8x faster at 4x4..16x16 planes (per-plane setup and mostly masked
// row vectors dominate the planes path), 1.2-1.7x at 28x28/32x32, but 0.65-0.8x at 56x56
// and 112x112 s1, where the planes path's register-blocked rows win and the transposes
// cost more than they save.
constexpr int64_t kChannelBlockedMaxPixels = 1024;

int index_of(const int* values, int count, int64_t v) {
  for (int i = 0; i < count; ++i)
    if (values[i] == v) return i;
  return -1;
}

class PreparedDepthwise final : public PreparedF32Conv {
 public:
  PreparedDepthwise(const ConvProblem& p, const float* weights, const float* bias,
                    const Knobs& knobs, Isa isa, const ukernel::F32DwconvKernels& kernels)
      : p_(p), isa_(isa), kernels_(kernels) {
    const int64_t taps = p.kh * p.kw;
    weights_.assign(weights, weights + p.k * taps);
    bias_.assign(static_cast<size_t>(p.k), 0.f);
    if (bias) std::copy(bias, bias + p.k, bias_.begin());
    const int ri = index_of(ukernel::kF32DwconvRows, ukernel::kF32DwconvNumRows, knobs.at("rows"));
    const int ui = index_of(ukernel::kF32DwconvVecs, ukernel::kF32DwconvNumVecs, knobs.at("vecs"));
    rows_fn_ = kernels.rows[ri][ui];
    axis_ = knobs.at("parallel");
    layout_ = knobs.at("layout");

    ukernel::F32DwconvParams& k = params_;
    k.h = p.h, k.w = p.w, k.pad_t = p.pad_t, k.pad_l = p.pad_l;
    k.kh = p.kh, k.kw = p.kw, k.sh = p.stride_h, k.sw = p.stride_w, k.dh = p.dil_h, k.dw = p.dil_w;
    k.ow = p.ow();
    // Room for the last full vector step (lanes x the largest vecs knob, so one buffer
    // layout serves every knob point) plus the widest tap offset, rounded to 8 floats.
    const int64_t step = static_cast<int64_t>(kernels.lanes) * ukernel::kF32DwconvVecs[1];
    k.phase_width =
        ((k.ow + step - 1) / step * step + (p.kw - 1) * p.dil_w / p.stride_w + 7) / 8 * 8;
    k.row_stride = p.stride_w * k.phase_width;
    const Epilogue& e = p.epilogue;
    k.clamp_min = e.clamp_min();
    k.clamp_max = e.clamp_max();
    late_act_ = !e.is_clamp();
    k.oh = p.oh();
    k.cb_h = (p.oh() - 1) * p.stride_h + (p.kh - 1) * p.dil_h + 1;
    k.cb_w = (p.ow() - 1) * p.stride_w + (p.kw - 1) * p.dil_w + 1;
    if (layout_ == kLayoutChannelBlocked) {
      // Weights [mult][channel block][taps][lanes] and bias [mult][block][lanes], lane l of
      // block b = input channel b*L + l (output channel (b*L + l)*mult + m), zero past C.
      const int64_t lanes = kernels.lanes, mult = p.k / p.c;
      blocks_ = (p.c + lanes - 1) / lanes;
      cb_weights_.assign(static_cast<size_t>(mult * blocks_ * taps * lanes), 0.f);
      cb_bias_.assign(static_cast<size_t>(mult * blocks_ * lanes), 0.f);
      for (int64_t m = 0; m < mult; ++m)
        for (int64_t c = 0; c < p.c; ++c) {
          const int64_t oc = c * mult + m, b = c / lanes, l = c % lanes;
          for (int64_t t = 0; t < taps; ++t)
            cb_weights_[static_cast<size_t>(((m * blocks_ + b) * taps + t) * lanes + l)] =
                weights[oc * taps + t];
          cb_bias_[static_cast<size_t>((m * blocks_ + b) * lanes + l)] = bias_[oc];
        }
      // Per thread: the padded channel block, then the output tile [oh*ow][lanes].
      cb_tmp_off_ = static_cast<size_t>((k.cb_h * k.cb_w * lanes + 15) / 16 * 16);
      buf_floats_ = cb_tmp_off_ + static_cast<size_t>((p.oh() * p.ow() * lanes + 15) / 16 * 16);
    } else {
      // Buffered rows for all output rows of a plane: the most any work item needs.
      buf_floats_ = static_cast<size_t>(k.cb_h * k.row_stride);
    }
  }

  size_t workspace_bytes(int threads) const override {
    return static_cast<size_t>(std::max(threads, 1)) * buf_floats_ * sizeof(float);
  }
  size_t packed_bytes() const override { return (weights_.size() + bias_.size()) * sizeof(float); }

  void run_typed(const float* in, float* out, const float* residual, void* workspace,
                 ThreadPool& pool) const override {
    const int64_t planes = p_.n * p_.c, oh = p_.oh();
    const size_t threads = static_cast<size_t>(pool.threads());
    float* scratch = static_cast<float*>(workspace);
    // Exactly one chunk per thread, so chunk t owns scratch slot t.
    if (layout_ == kLayoutChannelBlocked) {
      // Threads split (image, channel block) items whatever the parallel knob.
      const int64_t items = p_.n * blocks_;
      pool.parallel_for(threads, [&](size_t t) {
        float* buf = scratch + t * buf_floats_;
        const int64_t b = items * static_cast<int64_t>(t) / static_cast<int64_t>(threads);
        const int64_t e = items * static_cast<int64_t>(t + 1) / static_cast<int64_t>(threads);
        for (int64_t q = b; q < e; ++q) channel_block(in, out, residual, q, buf);
      });
      return;
    }
    pool.parallel_for(threads, [&](size_t t) {
      float* buf = scratch + t * buf_floats_;
      if (axis_ == kAxisChannel) {
        const int64_t b = planes * static_cast<int64_t>(t) / static_cast<int64_t>(threads);
        const int64_t e = planes * static_cast<int64_t>(t + 1) / static_cast<int64_t>(threads);
        for (int64_t q = b; q < e; ++q) plane_rows(in, out, residual, q, 0, oh, buf);
      } else {
        const int64_t b = oh * static_cast<int64_t>(t) / static_cast<int64_t>(threads);
        const int64_t e = oh * static_cast<int64_t>(t + 1) / static_cast<int64_t>(threads);
        if (b < e)
          for (int64_t q = 0; q < planes; ++q) plane_rows(in, out, residual, q, b, e, buf);
      }
    });
  }

 private:
  // Channel block q = n * blocks + b: lanes channels b*L.. of image n, all multipliers.
  void channel_block(const float* in, float* out, const float* residual, int64_t q,
                     float* buf) const {
    const int64_t lanes = kernels_.lanes, mult = p_.k / p_.c, taps = p_.kh * p_.kw;
    const int64_t n = q / blocks_, b = q % blocks_, c0 = b * lanes;
    const int64_t valid = p_.c - c0 < lanes ? p_.c - c0 : lanes;
    const int64_t hw = p_.h * p_.w, ohw = p_.oh() * p_.ow();
    float* tmp = buf + cb_tmp_off_;
    kernels_.cb_pack(params_, in + (n * p_.c + c0) * hw, hw, valid, buf);
    for (int64_t m = 0; m < mult; ++m) {
      const int64_t wb = m * blocks_ + b;
      kernels_.cb_rows(params_, buf, cb_weights_.data() + wb * taps * lanes,
                       cb_bias_.data() + wb * lanes, tmp);
      // Output channel (c0 + l) * mult + m: lanes are mult planes apart.
      const int64_t off = (n * p_.k + c0 * mult + m) * ohw;
      kernels_.cb_unpack(params_, tmp, valid, mult * ohw, residual ? residual + off : nullptr,
                         out + off);
      if (late_act_) {
        const Epilogue e{p_.epilogue.act, p_.epilogue.p0, p_.epilogue.p1, false};
        if (mult == 1)
          apply_epilogue(isa_, e, static_cast<size_t>(valid * ohw), out + off, 0.f, nullptr);
        else
          for (int64_t l = 0; l < valid; ++l)
            apply_epilogue(isa_, e, static_cast<size_t>(ohw), out + off + l * mult * ohw, 0.f,
                           nullptr);
      }
    }
  }

  // Output rows [oy0, oy1) of every output channel fed by input plane q = n*C + c.
  void plane_rows(const float* in, float* out, const float* residual, int64_t q, int64_t oy0,
                  int64_t oy1, float* buf) const {
    const int64_t c = q % p_.c, n = q / p_.c, mult = p_.k / p_.c, ow = params_.ow;
    const int64_t oh = p_.oh(), rows = oy1 - oy0;
    kernels_.fill(params_, in + q * p_.h * p_.w, oy0 * p_.stride_h,
                  (rows - 1) * p_.stride_h + (p_.kh - 1) * p_.dil_h + 1, buf);
    for (int64_t m = 0; m < mult; ++m) {
      const int64_t k = c * mult + m;
      const int64_t off = ((n * p_.k + k) * oh + oy0) * ow;
      rows_fn_(params_, rows, buf, weights_.data() + k * p_.kh * p_.kw, bias_[k],
               residual ? residual + off : nullptr, out + off);
      if (late_act_)
        apply_epilogue(isa_, Epilogue{p_.epilogue.act, p_.epilogue.p0, p_.epilogue.p1, false},
                       static_cast<size_t>(rows * ow), out + off, 0.f, nullptr);
    }
  }

  ConvProblem p_;
  Isa isa_;
  const ukernel::F32DwconvKernels& kernels_;
  ukernel::F32DwconvParams params_;
  ukernel::F32DwconvRowsFn rows_fn_ = nullptr;
  int64_t axis_ = kAxisChannel, layout_ = kLayoutPlanes, blocks_ = 0;
  bool late_act_ = false;
  size_t buf_floats_ = 0, cb_tmp_off_ = 0;
  AlignedVector<float> weights_, bias_, cb_weights_, cb_bias_;
};

class DepthwiseConv final : public ConvAlgorithm {
 public:
  std::string_view name() const override { return "depthwise"; }
  bool supports(const ConvProblem& p) const override { return p.groups == p.c && p.k % p.c == 0; }
  KnobSpace knob_space(const ConvProblem& p, Isa isa) const override {
    KnobSpace s;
    s.knobs.push_back({"rows",
                       {std::begin(ukernel::kF32DwconvRows), std::end(ukernel::kF32DwconvRows)},
                       "output rows per register block (input row loads shared across them)"});
    s.knobs.push_back({"vecs",
                       {std::begin(ukernel::kF32DwconvVecs), std::end(ukernel::kF32DwconvVecs)},
                       "vectors per step along output W (vector width multiple)"});
    s.knobs.push_back({"parallel",
                       {kAxisChannel, kAxisRows},
                       "parallel axis: 0 = planes (image x channel), 1 = output rows of each plane "
                       "(layout 0 only; layout 1 always splits channel blocks)"});
    s.knobs.push_back({"layout",
                       {kLayoutPlanes, kLayoutChannelBlocked},
                       "0 = planes (vectors along output W); 1 = channel-blocked (vectors across "
                       "a block of channels, rows/vecs unused)"});
    return s;
  }
  Knobs default_knobs(const ConvProblem& p, Isa isa) const override {
    const int64_t layout =
        p.oh() * p.ow() <= kChannelBlockedMaxPixels ? kLayoutChannelBlocked : kLayoutPlanes;
    return {{"rows", 4}, {"vecs", 1}, {"parallel", kAxisChannel}, {"layout", layout}};
  }
  std::unique_ptr<PreparedConv> prepare(const ConvProblem& p, const ConvWeights& view,
                                        const Knobs& knobs, Isa isa) const override {
    const float* weights = view.f32_data();
    const float* bias = view.bias;
    return prepare_depthwise(p, weights, bias, knobs, isa, ukernel::f32_dwconv_for(isa));
  }
};

}  // namespace

std::unique_ptr<PreparedConv> prepare_depthwise(const ConvProblem& p, const float* weights,
                                                const float* bias, const Knobs& knobs, Isa isa,
                                                const ukernel::F32DwconvKernels& kernels) {
  p.validate();
  const ConvAlgorithm& a = depthwise_conv_algorithm();
  DLAS_CHECK(a.supports(p), ErrorKind::kUnsupported, "depthwise: unsupported problem ", p.key(),
             " (needs groups == C and K a multiple of C)");
  a.knob_space(p, isa).validate(knobs, "depthwise");
  return std::make_unique<PreparedDepthwise>(p, weights, bias, knobs, isa, kernels);
}

const ConvAlgorithm& depthwise_conv_algorithm() {
  static const DepthwiseConv algo;
  return algo;
}

}  // namespace dlas

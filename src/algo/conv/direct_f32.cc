// `direct` convolution: a sliding window over the unreshaped input -- no im2col.
// The input image is copied once into a zero-padded buffer, split for stride s into
// s_h x s_w phase planes (plane (py, px) holds padded pixels (py + s_h i, px + s_w j)),
// so that for every tap (c, ky, kx) the inputs of NR consecutive output pixels of one
// output row are NR consecutive floats. The GEMM microkernel then runs on weight
// panels (MR output channels) x output-row tiles (NR pixels), its B-row offset table
// being the constant per-tap displacement into the planes: register blocking over
// output channels x output pixels, reading the input where it lies.
//
// Knobs: ukernel (tile MR x NR), oc_block (output channels per task, rounded up to MR),
// row_block (output rows per task), parallel (0: threads split output channels first;
// 1: output rows first).
#include <cstring>
#include <limits>
#include <memory>

#include "algo/conv/conv_impl.h"
#include "algo/conv/gemm_common.h"
#include "dlas/core/aligned_vector.h"
#include "dlas/core/error.h"
#include "dlas/hw/thread_pool.h"

namespace dlas {
namespace {

using conv_detail::div_up;
using conv_detail::round_up;

class PreparedDirectConv final : public PreparedF32Conv {
 public:
  PreparedDirectConv(const ConvProblem& p, const float* w, const float* bias, const Knobs& kn,
                     Isa isa)
      : p_(p), isa_(isa), uk_(&conv_detail::ukernel_from_knob(isa, kn.at("ukernel"))) {
    mr_ = uk_->mr, nr_ = uk_->nr;
    kg_ = p.k_per_group(), cg_ = p.c_per_group();
    r_ = cg_ * p.kh * p.kw;
    oh_ = p.oh(), ow_ = p.ow();
    sh_ = p.stride_h, sw_ = p.stride_w;
    hq_ = div_up(p.h + p.pad_t + p.pad_b, sh_);
    wq_ = div_up(p.w + p.pad_l + p.pad_r, sw_);
    plane_ = hq_ * wq_;
    panels_ = div_up(kg_, mr_);
    ocb_ = round_up(kn.at("oc_block"), mr_) / mr_;  // in panels
    if (ocb_ > panels_) ocb_ = panels_;
    rows_ = kn.at("row_block") < oh_ ? kn.at("row_block") : oh_;
    by_rows_ = kn.at("parallel") == 1;
    wpack_ = conv_detail::pack_conv_weights(p, w, *uk_);
    bias_.assign(static_cast<size_t>(panels_ * mr_ * p.groups), 0.f);
    if (bias)
      for (int64_t g = 0; g < p.groups; ++g)
        for (int64_t i = 0; i < kg_; ++i) bias_[g * panels_ * mr_ + i] = bias[g * kg_ + i];
    for (int64_t c = 0; c < cg_; ++c)
      for (int64_t ky = 0; ky < p.kh; ++ky)
        for (int64_t kx = 0; kx < p.kw; ++kx) {
          const int64_t y = ky * p.dil_h, x = kx * p.dil_w;
          const int64_t phase = (c * sh_ + y % sh_) * sw_ + x % sw_;
          b_off_.push_back(phase * plane_ + (y / sh_) * wq_ + x / sw_);
        }
    const Epilogue& e = p.epilogue;
    fuse_clamp_ = e.is_clamp() && !e.residual;
    cmin_ = fuse_clamp_ ? e.clamp_min() : -std::numeric_limits<float>::infinity();
    cmax_ = fuse_clamp_ ? e.clamp_max() : std::numeric_limits<float>::infinity();
  }

  // The phase planes of one image, plus NR floats of slack: the last tile of a row
  // reads NR floats even where fewer outputs remain.
  size_t workspace_bytes(int) const override {
    return static_cast<size_t>(p_.c * sh_ * sw_ * plane_ + nr_ + 16) * sizeof(float);
  }

  size_t packed_bytes() const override { return (wpack_.size() + bias_.size()) * sizeof(float); }

  void run_typed(const float* in, float* out, const float* residual, void* workspace,
                 ThreadPool& pool) const override {
    float* planes = static_cast<float*>(workspace);
    const int64_t threads = pool.threads();
    const int64_t nrb = div_up(oh_, rows_), nocb = div_up(panels_, ocb_);
    const int64_t tasks = p_.groups * nrb * nocb;
    const int64_t slack = p_.c * sh_ * sw_ * plane_;
    for (int64_t x = 0; x < nr_ + 16; ++x) planes[slack + x] = 0.f;
    for (int64_t n = 0; n < p_.n; ++n) {
      const float* img = in + n * p_.c * p_.h * p_.w;
      pool.parallel_for(static_cast<size_t>(threads), [&](size_t t) {
        int64_t b, e;
        conv_detail::chunk_range(p_.c, threads, static_cast<int64_t>(t), &b, &e);
        for (int64_t c = b; c < e; ++c) fill_planes(img + c * p_.h * p_.w, planes, c);
      });
      pool.parallel_for(static_cast<size_t>(threads), [&](size_t t) {
        int64_t b, e;
        conv_detail::chunk_range(tasks, threads, static_cast<int64_t>(t), &b, &e);
        for (int64_t it = b; it < e; ++it) {
          int64_t g, rb, ob;
          if (by_rows_) {
            ob = it % nocb, rb = (it / nocb) % nrb, g = it / (nocb * nrb);
          } else {
            rb = it % nrb, ob = (it / nrb) % nocb, g = it / (nrb * nocb);
          }
          task(planes, out, residual, n, g, rb, ob);
        }
      });
    }
  }

 private:
  // Channel c of the image into its s_h x s_w zero-padded phase planes.
  void fill_planes(const float* src, float* planes, int64_t c) const {
    for (int64_t py = 0; py < sh_; ++py)
      for (int64_t px = 0; px < sw_; ++px) {
        float* dst = planes + ((c * sh_ + py) * sw_ + px) * plane_;
        for (int64_t i = 0; i < hq_; ++i) {
          float* d = dst + i * wq_;
          const int64_t iy = i * sh_ + py - p_.pad_t;
          if (iy < 0 || iy >= p_.h) {
            for (int64_t j = 0; j < wq_; ++j) d[j] = 0.f;
            continue;
          }
          const float* s = src + iy * p_.w;
          // ix = j * sw + px - pad_l in [0, w)  <=>  j in [lo, hi)
          const int64_t off = px - p_.pad_l;
          int64_t lo = off >= 0 ? 0 : div_up(-off, sw_);
          int64_t hi = p_.w - off <= 0 ? 0 : div_up(p_.w - off, sw_);
          if (hi > wq_) hi = wq_;
          if (lo > hi) lo = hi;
          int64_t j = 0;
          for (; j < lo; ++j) d[j] = 0.f;
          if (sw_ == 1) {
            std::memcpy(d + lo, s + lo + off, static_cast<size_t>(hi - lo) * sizeof(float));
            j = hi;
          } else {
            for (; j < hi; ++j) d[j] = s[j * sw_ + off];
          }
          for (; j < wq_; ++j) d[j] = 0.f;
        }
      }
  }

  void task(const float* planes, float* out, const float* residual, int64_t n, int64_t g,
            int64_t rb, int64_t ob) const {
    const int64_t ohw = oh_ * ow_;
    const int64_t oy0 = rb * rows_, oy1 = oy0 + rows_ < oh_ ? oy0 + rows_ : oh_;
    const int64_t ip0 = ob * ocb_, ip1 = ip0 + ocb_ < panels_ ? ip0 + ocb_ : panels_;
    const float* base = planes + g * cg_ * sh_ * sw_ * plane_;
    const float* wg = wpack_.data() + g * panels_ * r_ * mr_;
    const float* bias_g = bias_.data() + g * panels_ * mr_;
    float* out_g = out + (n * p_.k + g * kg_) * ohw;
    for (int64_t oy = oy0; oy < oy1; ++oy) {
      for (int64_t ox = 0; ox < ow_; ox += nr_) {
        const int64_t cols = ow_ - ox < nr_ ? ow_ - ox : nr_;
        for (int64_t ip = ip0; ip < ip1; ++ip) {
          const int64_t rows = kg_ - ip * mr_ < mr_ ? kg_ - ip * mr_ : mr_;
          uk_->fn(static_cast<size_t>(rows), static_cast<size_t>(cols), static_cast<size_t>(r_),
                  wg + ip * r_ * mr_, base + oy * wq_ + ox, b_off_.data(),
                  out_g + ip * mr_ * ohw + oy * ow_ + ox, static_cast<size_t>(ohw),
                  bias_g + ip * mr_, false, cmin_, cmax_);
        }
      }
      if (fuse_clamp_) continue;
      const int64_t k_end = ip1 * mr_ < kg_ ? ip1 * mr_ : kg_;
      for (int64_t kk = ip0 * mr_; kk < k_end; ++kk) {
        const int64_t off = (n * p_.k + g * kg_ + kk) * ohw + oy * ow_;
        apply_epilogue(isa_, p_.epilogue, static_cast<size_t>(ow_), out + off, 0.f,
                       residual ? residual + off : nullptr);
      }
    }
  }

  ConvProblem p_;
  Isa isa_;
  const ukernel::F32GemmUkernel* uk_;
  int64_t mr_, nr_, kg_, cg_, r_, oh_, ow_, sh_, sw_, hq_, wq_, plane_, panels_, ocb_, rows_;
  bool by_rows_, fuse_clamp_;
  float cmin_, cmax_;
  AlignedVector<float> wpack_, bias_;
  std::vector<int64_t> b_off_;
};

class DirectConvAlgorithm final : public ConvAlgorithm {
 public:
  std::string_view name() const override { return "direct"; }
  bool supports(const ConvProblem&) const override { return true; }

  KnobSpace knob_space(const ConvProblem&, Isa isa) const override {
    KnobSpace s;
    s.knobs.push_back(conv_detail::ukernel_knob(isa));
    s.knobs.push_back(
        {"oc_block", {8, 16, 32, 64, 128, 4096}, "output channels per task (rounded up to MR)"});
    s.knobs.push_back({"row_block", {1, 2, 4, 8, 4096}, "output rows per task"});
    s.knobs.push_back({"parallel", {0, 1}, "0: threads split output channels; 1: output rows"});
    return s;
  }

  Knobs default_knobs(const ConvProblem& p, Isa isa) const override {
    // Tiles run along one output row: take the kernel whose NR wastes the fewest lanes
    // on this output width (the ISA default on ties), e.g. 8x8 for 8- and 4-wide rows.
    const auto list = conv_detail::conv_gemm_ukernels(isa);
    int64_t uk = 0;
    for (size_t i = 1; i < list.size(); ++i)
      if (round_up(p.ow(), list[i]->nr) < round_up(p.ow(), list[uk]->nr))
        uk = static_cast<int64_t>(i);
    // All output channels of a row block per task (weights streamed once per row
    // block); rows split over threads when there are enough, else channels in blocks.
    const int64_t rows = 2;
    if (p.n * p.groups * div_up(p.oh(), rows) >= 4)
      return {{"ukernel", uk}, {"oc_block", 4096}, {"row_block", rows}, {"parallel", 1}};
    int64_t ocb = 8;
    for (int64_t v : {128, 64, 32, 16})
      if (div_up(p.k_per_group(), v) >= 4) {
        ocb = v;
        break;
      }
    return {{"ukernel", uk}, {"oc_block", ocb}, {"row_block", 4096}, {"parallel", 0}};
  }

  std::unique_ptr<PreparedConv> prepare(const ConvProblem& p, const ConvWeights& view,
                                        const Knobs& knobs, Isa isa) const override {
    const float* weights = view.f32_data();
    const float* bias = view.bias;
    p.validate();
    knob_space(p, isa).validate(knobs, "direct conv " + p.key());
    return std::make_unique<PreparedDirectConv>(p, weights, bias, knobs, isa);
  }
};

}  // namespace

const ConvAlgorithm& direct_conv_algorithm() {
  static const DirectConvAlgorithm algo;
  return algo;
}

}  // namespace dlas

// depthwise on blocked layouts (nchw8c / nchw16c, dlas/algo/layout.h), channel multiplier
// 1: the vector lanes are a block's channels, so per output pixel and kernel tap one FMA
// multiplies the input pixel's block vector by the block's per-channel weight vector. The
// f32-dwnchwc microkernels hold `pw` output pixels of a row in registers.
//
//   prepare: weights packed [C blocks][KH][KW][B] (zero past C), bias padded to whole
//            blocks; per output row and column the range of taps inside the input.
//   bf16:    the same conv on bf16 blocks (nchw16c holding bfloat16) runs these tiles with
//            the activations read and written as bf16 (bf16-dwnchwc): no widening pass, the
//            widened f32 twin's results bit for bit. Clamp epilogues fuse into the store;
//            other activations run on each tile in f32, rounded once after.
//   run:     threads split the (image, channel block, run of output rows) items. Each row
//            runs in tiles of pw pixels. On rows of at most two tiles with a kernel width
//            the set unrolls (3, 5: undilated) the edge tiles copy their row windows with
//            the padding zeroed (a few vectors on the stack); otherwise the edge columns
//            run one pixel at a time over their in-bounds taps only. No padded copy of the
//            input is made. Rows near the top and bottom count only their in-bounds kernel
//            rows.
#include <algorithm>
#include <limits>
#include <memory>
#include <type_traits>
#include <vector>

#include "algo/conv/conv_impl.h"
#include "algo/conv/depthwise_nchwc_f32.h"
#include "algo/microkernels/bf16-dwnchwc/bf16_dwnchwc.h"
#include "algo/microkernels/f32-dwnchwc/f32_dwnchwc.h"
#include "algo/microkernels/h16-vcvt/h16_vcvt.h"
#include "dlas/algo/conv.h"
#include "dlas/core/aligned_vector.h"
#include "dlas/core/error.h"
#include "dlas/hw/thread_pool.h"

namespace dlas {
namespace {

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// Pixel counts the `pw` knob offers (each capped at the kernel set's register budget).
constexpr int64_t kPixelChoices[] = {1, 2, 3, 4, 5, 6, 7, 8, 10, 12, 14, 16};

// Taps t < k with 0 <= o*s + t*d - pad < in, as [first, last).
void tap_range(int64_t o, int64_t s, int64_t d, int64_t pad, int64_t k, int64_t in, int64_t& first,
               int64_t& last) {
  const int64_t a = pad - o * s, b = in + pad - o * s;  // t*d in [a, b)
  first = a <= 0 ? 0 : ceil_div(a, d);
  last = b <= 0 ? 0 : std::min(k, ceil_div(b, d));
  if (first > last) first = last;
}

// The kernel types per stored element: f32, or bf16 (uint16_t) with an f32-out twin per
// tile for the activations run outside the kernel.
template <class T>
struct DwTypes;
template <>
struct DwTypes<float> {
  using Args = ukernel::F32DwNchwcArgs;
  using Fn = ukernel::F32DwNchwcFn;
  using F32OutFn = ukernel::F32DwNchwcFn;
  using Set = ukernel::F32DwNchwcUkernels;
  using Base = PreparedF32Conv;
  static F32OutFn f32_out(const Set& s, int px, int stride, int kw) {
    return s.select(px, stride, kw);
  }
};
template <>
struct DwTypes<uint16_t> {
  using Args = ukernel::Bf16DwNchwcArgs;
  using Fn = ukernel::Bf16DwNchwcFn;
  using F32OutFn = ukernel::Bf16DwNchwcF32OutFn;
  using Set = ukernel::Bf16DwNchwcUkernels;
  struct Base : PreparedH16Conv {
    ConvCompute compute() const final { return ConvCompute::kF32On16Bit; }
  };
  static F32OutFn f32_out(const Set& s, int px, int stride, int kw) {
    return s.select_f32_out(px, stride, kw);
  }
};

template <class T>
class PreparedDwNchwc final : public DwTypes<T>::Base {
  using Args = typename DwTypes<T>::Args;
  using Fn = typename DwTypes<T>::Fn;
  using F32OutFn = typename DwTypes<T>::F32OutFn;
  static constexpr bool kF32 = std::is_same_v<T, float>;

 public:
  PreparedDwNchwc(const ConvProblem& p, const float* w, const float* bias, const Knobs& kn, Isa isa,
                  const typename DwTypes<T>::Set& set)
      : p_(p), isa_(isa) {
    b_ = layout_block(p.y_layout);
    cb_ = ceil_div(p.c, b_);
    oh_ = p.oh(), ow_ = p.ow();
    pw_ = std::min<int64_t>({kn.at("pw"), set.max_pixels(), ow_});
    const int stride = static_cast<int>(p.stride_w);
    // Interior tiles take every tap along W: the unrolled kernels where the set has them.
    const int kw = p.dil_w == 1 ? static_cast<int>(p.kw) : 0;
    for (int px = 1; px <= pw_; ++px) {
      kernels_[px - 1] = set.select(px, stride, kw);
      f32_out_[px - 1] = DwTypes<T>::f32_out(set, px, stride, kw);
      if (!kernels_[px - 1]) {
        kernels_[px - 1] = set.select(px, stride, 0);
        f32_out_[px - 1] = DwTypes<T>::f32_out(set, px, stride, 0);
      }
      DLAS_CHECK(kernels_[px - 1] != nullptr && f32_out_[px - 1] != nullptr, ErrorKind::kInternal,
                 "depthwise (blocked): no kernel for ", px, " pixels");
    }
    // With an undilated kernel width the set unrolls (select falls back to the kw = 0
    // kernel for other widths), every tile runs those kernels, the edge tiles skipping the
    // padding columns (compiled out for "same" paddings), so no pixel runs alone. (When edge
    // tiles copied their windows, rows of more than two tiles ran one-pixel edge columns
    // instead.)
    window_ = kw > 0 && set.select(1, stride, kw) != set.select(1, stride, 0);
    edge_ = set.select(1, stride, 0);
    edge_f32_out_ = DwTypes<T>::f32_out(set, 1, stride, 0);
    DLAS_CHECK(edge_ != nullptr && edge_f32_out_ != nullptr, ErrorKind::kInternal,
               "depthwise (blocked): no edge kernel");
    if constexpr (!kF32) cvt_ = &ukernel::h16_vcvt_for(DType::kBF16, isa);
    rows_.resize(static_cast<size_t>(oh_));
    for (int64_t oy = 0; oy < oh_; ++oy)
      tap_range(oy, p.stride_h, p.dil_h, p.pad_t, p.kh, p.h, rows_[oy].first, rows_[oy].last);
    cols_.resize(static_cast<size_t>(ow_));
    in_lo_ = ow_, in_hi_ = ow_;
    for (int64_t ox = 0; ox < ow_; ++ox) {
      tap_range(ox, p.stride_w, p.dil_w, p.pad_l, p.kw, p.w, cols_[ox].first, cols_[ox].last);
      const bool full = cols_[ox].first == 0 && cols_[ox].last == p.kw;
      if (full && in_lo_ == ow_) in_lo_ = ox;
      if (full) in_hi_ = ox + 1;
    }
    if (in_lo_ == ow_) in_hi_ = ow_;
    if (window_) {
      // The row in ceil(ow / pw) tiles of near-equal width: no narrow last tile, whose few
      // accumulators would wait on the FMA latency. The same for every row: laid out once.
      const int64_t tiles = ceil_div(ow_, pw_), narrow = ow_ / tiles, wide = ow_ % tiles;
      for (int64_t ox = 0, t = 0; ox < ow_; ++t) {
        const int64_t px = narrow + (t < wide ? 1 : 0);
        const int64_t c0 = ox * p.stride_w - p.pad_l;  // input column of window column 0
        const int64_t cols = (px - 1) * p.stride_w + p.kw;
        WindowTile wt;
        wt.ox = ox, wt.px = px;
        wt.q_lo = static_cast<int>(std::max<int64_t>(0, -c0));
        wt.q_hi = static_cast<int>(std::min<int64_t>(cols, p.w - c0));
        wt.x_col = c0 + wt.q_lo;
        wtiles_.push_back(wt);
        ox += px;
      }
    }
    // Weights [cb][kh][kw][b], bias [cb][b].
    const int64_t taps = p.kh * p.kw;
    w_.assign(static_cast<size_t>(cb_ * taps * b_), 0.f);
    for (int64_t c = 0; c < p.c; ++c)
      for (int64_t t = 0; t < taps; ++t) w_[((c / b_) * taps + t) * b_ + c % b_] = w[c * taps + t];
    bias_.assign(static_cast<size_t>(cb_ * b_), 0.f);
    if (bias) std::copy(bias, bias + p.c, bias_.begin());
    spatial_ = split_spatially(oh_ * ow_,
                               static_cast<int64_t>(sizeof(T)) * cb_ * b_ * (p.h * p.w + oh_ * ow_),
                               static_cast<int64_t>(sizeof(float) * w_.size()));
  }

  size_t workspace_bytes(int) const override { return 0; }
  size_t packed_bytes() const override { return (w_.size() + bias_.size()) * sizeof(float); }

  void run_typed(const T* in, T* out, const T* residual, void*, ThreadPool& pool) const override {
    const Epilogue& e = p_.epilogue;
    const int64_t plane_in = p_.h * p_.w * b_, plane_out = oh_ * ow_ * b_;
    // bf16 with an activation other than a clamp: each tile in f32 on the stack, the
    // activation, then rounded once (f32 runs it over the stored row).
    const bool tile_act = !kF32 && !e.is_clamp();
    auto tile = [&](Fn fn, F32OutFn f32_fn, int64_t px, const Args& a, const T* xt, const float* wt,
                    T* yt) {
      if (!tile_act) return fn(a, xt, wt, yt);
      if constexpr (!kF32) {
        alignas(64) float f[ukernel::kDwNchwcMaxPixels * 16];
        const size_t n = static_cast<size_t>(px * b_);
        f32_fn(a, xt, wt, f);
        apply_epilogue(isa_, {e.act, e.p0, e.p1, false}, n, f, 0.f, nullptr);
        cvt_->narrow(n, f, yt);
      }
    };
    Args base;
    base.x_khs = static_cast<size_t>(p_.dil_h * p_.w * b_);
    base.x_kws = static_cast<size_t>(p_.dil_w * b_);
    base.x_ps = static_cast<size_t>(p_.stride_w * b_);
    base.w_khs = static_cast<size_t>(p_.kw * b_);
    base.lo = e.clamp_min(), base.hi = e.clamp_max();
    // Output row oy of plane (image * cb + block).
    auto row = [&](int64_t plane, int64_t oy) {
      const int64_t cb = plane % cb_;
      const T* x = in + plane * plane_in;
      T* yr = out + plane * plane_out + oy * ow_ * b_;
      const T* rr = residual ? residual + plane * plane_out + oy * ow_ * b_ : nullptr;
      const float* wb = w_.data() + cb * p_.kh * p_.kw * b_;
      Args a = base;
      a.bias = bias_.data() + cb * b_;
      const int64_t ky0 = rows_[oy].first, ky1 = rows_[oy].last;
      const int64_t iy0 = oy * p_.stride_h + ky0 * p_.dil_h - p_.pad_t;
      a.kh = static_cast<size_t>(ky1 - ky0);
      if (window_) {
        // Every tile takes up to pw pixels; the edge tiles skip their window columns in the
        // padding, so edge pixels keep a tile's accumulators (one pixel at a time they ran
        // latency-bound: efficientnetb0's 5x5 layers on 14x14, 2.4x oneDNN's time).
        a.kw = static_cast<size_t>(p_.kw);
        const T* xrow = x + iy0 * p_.w * b_;
        const float* wrow = wb + ky0 * p_.kw * b_;
        for (const WindowTile& t : wtiles_) {
          a.q_lo = t.q_lo, a.q_hi = t.q_hi;
          a.r = rr ? rr + t.ox * b_ : nullptr;
          const T* xt = a.kh > 0 && t.q_lo < t.q_hi ? xrow + t.x_col * b_ : x;
          tile(kernels_[t.px - 1], f32_out_[t.px - 1], t.px, a, xt, wrow, yr + t.ox * b_);
        }
      }
      for (int64_t ox = window_ ? ow_ : 0; ox < ow_;) {
        const bool interior = ox >= in_lo_ && ox < in_hi_;
        const int64_t px = interior ? std::min(pw_, in_hi_ - ox) : 1;
        const int64_t kx0 = cols_[ox].first, kx1 = cols_[ox].last;
        a.kw = static_cast<size_t>(kx1 - kx0);
        a.r = rr ? rr + ox * b_ : nullptr;
        const T* xt = x;
        if (a.kh > 0 && a.kw > 0)
          xt = x + (iy0 * p_.w + ox * p_.stride_w + kx0 * p_.dil_w - p_.pad_l) * b_;
        tile(interior ? kernels_[px - 1] : edge_, interior ? f32_out_[px - 1] : edge_f32_out_, px,
             a, xt, wb + (ky0 * p_.kw + kx0) * b_, yr + ox * b_);
        ox += px;
      }
      if constexpr (kF32)
        if (!e.is_clamp())
          apply_epilogue(isa_, {e.act, e.p0, e.p1, false}, static_cast<size_t>(ow_ * b_), yr, 0.f,
                         nullptr);
    };
    // Items of `chunk` consecutive output rows of one plane, about kItemsPerThread per
    // thread where there are enough rows, so the pool's per-item cost stays small.
    const int64_t units = p_.n * cb_ * oh_;
    // (mobilenetv2's blocked depthwise layers, dlas_bench_conv, Zen 3, 2 threads: 0.90-1.0x
    // of one row per item on the 14x14 and smaller outputs, no change on the larger ones.)
    const int64_t chunk = std::clamp<int64_t>(
        units / (static_cast<int64_t>(pool.threads()) * kItemsPerThread), 1, oh_);
    const int64_t chunks = ceil_div(oh_, chunk);
    // Split spatially (split_spatially; a depthwise conv's weights are always the smaller):
    // per image, runs of rows outermost, every block of a run on one thread.
    pool.parallel_for(static_cast<size_t>(p_.n * cb_ * chunks), [&](size_t item) {
      const int64_t i = static_cast<int64_t>(item), per_image = cb_ * chunks;
      const int64_t rest = i % per_image;
      const int64_t plane = i / per_image * cb_ + (spatial_ ? rest % cb_ : rest / chunks);
      const int64_t oy0 = (spatial_ ? rest / cb_ : rest % chunks) * chunk;
      for (int64_t oy = oy0; oy < std::min(oh_, oy0 + chunk); ++oy) row(plane, oy);
    });
  }

 private:
  struct Range {
    int64_t first = 0, last = 0;
  };
  ConvProblem p_;
  Isa isa_;
  int64_t b_ = 16, cb_ = 0, oh_ = 0, ow_ = 0, pw_ = 1, in_lo_ = 0, in_hi_ = 0;
  std::vector<Range> rows_, cols_;               // taps inside the input per output row / column
  Fn kernels_[ukernel::kDwNchwcMaxPixels] = {};  // interior tiles
  Fn edge_ = nullptr;                            // one pixel, any taps along W
  F32OutFn f32_out_[ukernel::kDwNchwcMaxPixels] = {}, edge_f32_out_ = nullptr;  // bf16 only
  const ukernel::H16Vcvt* cvt_ = nullptr;                                       // bf16 only
  bool window_ = false;  // kernels_ unroll the kernel width and skip padding columns
  // window_: a row's tiles (first pixel and width, window columns inside the input, the
  // input column of the first inside one).
  struct WindowTile {
    int64_t ox = 0, px = 0, x_col = 0;
    int q_lo = 0, q_hi = 0;
  };
  std::vector<WindowTile> wtiles_;
  bool spatial_ = true;  // split_spatially
  AlignedVector<float> w_, bias_;
};

class DepthwiseNchwcConv final : public ConvAlgorithm {
 public:
  std::string_view name() const override { return "depthwise"; }

  // f32 depthwise convs with channel multiplier 1, input and output in one blocked layout.
  bool supports(const ConvProblem& p) const override {
    return p.types() == ConvTypes::kF32 && is_blocked(p.y_layout) && p.x_layout == p.y_layout &&
           p.groups == p.c && p.k == p.c;
  }

  KnobSpace knob_space(const ConvProblem&, Isa) const override {
    KnobSpace s;
    s.knobs.push_back({"pw",
                       std::vector<int64_t>(std::begin(kPixelChoices), std::end(kPixelChoices)),
                       "output pixels per register tile (capped by the kernel set's registers)"});
    return s;
  }

  // Untuned: the register budget's pixels, spread evenly over a row's tiles.
  Knobs default_knobs(const ConvProblem& p, Isa isa) const override {
    const ukernel::F32DwNchwcUkernels* set = kernels_for(p, isa);
    const int64_t cap = set ? set->max_pixels() : 8;
    const int64_t cols = std::max<int64_t>(1, p.ow());
    const int64_t px = ceil_div(cols, ceil_div(cols, cap));
    int64_t pw = kPixelChoices[0];
    for (int64_t v : kPixelChoices)
      if (v <= px) pw = v;
    return {{"pw", pw}};
  }

  std::unique_ptr<PreparedConv> prepare(const ConvProblem& p, const ConvWeights& weights,
                                        const Knobs& knobs, Isa isa) const override {
    DLAS_CHECK(supports(p), ErrorKind::kUnsupported, "depthwise (blocked) does not support ",
               p.key());
    const ukernel::F32DwNchwcUkernels* set = kernels_for(p, isa);
    DLAS_CHECK(set != nullptr, ErrorKind::kUnsupported, "layout ", layout_name(p.y_layout),
               " needs vectors of ", layout_block(p.y_layout), " floats, which the ", isa_name(isa),
               " path lacks");
    knob_space(p, isa).validate(knobs, "depthwise");
    return std::make_unique<PreparedDwNchwc<float>>(p, weights.f32_data(), weights.bias, knobs, isa,
                                                    *set);
  }

 private:
  static const ukernel::F32DwNchwcUkernels* kernels_for(const ConvProblem& p, Isa isa) {
    return ukernel::f32_dwnchwc_for(isa, static_cast<int>(layout_block(p.y_layout)));
  }
};

}  // namespace

std::unique_ptr<PreparedConv> prepare_depthwise_nchwc(const ConvProblem& p, const ConvWeights& w,
                                                      const Knobs& knobs, Isa isa,
                                                      const ukernel::F32DwNchwcUkernels& set) {
  const ConvAlgorithm& algo = depthwise_nchwc_conv_algorithm();
  DLAS_CHECK(algo.supports(p) && set.lanes == layout_block(p.y_layout), ErrorKind::kUnsupported,
             "depthwise (blocked) with ", set.name, " does not support ", p.key());
  algo.knob_space(p, isa).validate(knobs, "depthwise");
  return std::make_unique<PreparedDwNchwc<float>>(p, w.f32_data(), w.bias, knobs, isa, set);
}

bool bf16_blocked_depthwise_applies(const ConvProblem& p, Isa isa) {
  return p.w_type == DType::kBF16 && p.x_type == DType::kBF16 && p.y_type == DType::kBF16 &&
         p.x_layout == Layout::kNchw16c && p.y_layout == Layout::kNchw16c && p.groups == p.c &&
         p.k == p.c && ukernel::bf16_dwnchwc_for(isa) != nullptr;
}

std::unique_ptr<PreparedConv> prepare_bf16_blocked_depthwise(
    const ConvProblem& p, const ConvWeights& w, const Knobs& knobs, Isa isa,
    const ukernel::Bf16DwNchwcUkernels* set) {
  if (!set) set = ukernel::bf16_dwnchwc_for(isa);
  DLAS_CHECK(set != nullptr && p.w_type == DType::kBF16 && p.x_type == DType::kBF16 &&
                 p.y_type == DType::kBF16 && p.x_layout == Layout::kNchw16c &&
                 p.y_layout == Layout::kNchw16c && p.groups == p.c && p.k == p.c &&
                 set->lanes == 16,
             ErrorKind::kUnsupported, "bf16 depthwise on blocks does not support ", p.key(), " on ",
             isa_name(isa));
  depthwise_nchwc_conv_algorithm().knob_space(p.as_f32(), isa).validate(knobs, "depthwise");
  // The f32 twin's weights: the bf16 ones widened exactly.
  std::vector<float> wf(static_cast<size_t>(p.weight_count()));
  ukernel::h16_vcvt_for(DType::kBF16, isa).widen(wf.size(), w.half_data(), wf.data());
  return std::make_unique<PreparedDwNchwc<uint16_t>>(p, wf.data(), w.bias, knobs, isa, *set);
}

const ConvAlgorithm& depthwise_nchwc_conv_algorithm() {
  static const DepthwiseNchwcConv algo;
  return algo;
}

}  // namespace dlas

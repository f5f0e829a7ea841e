// `direct` (but its AMX path, direct_h16.cc, and its native path on bf16 blocks,
// direct_nchwc_h16.cc), `spatial-pack`, `winograd` and `depthwise` for 16-bit tensors: the
// f32 twin run on widened tensors (the emulated compute path on every ISA). run() widens the
// input (and residual) into the workspace with the h16 row conversions -- on AVX-512 paths
// straight into the twin's 16-channel blocks where it has a blocked implementation, and flat
// when the 16-bit problem is itself on 16-bit blocks (nchw16c) -- runs the f32 algorithm
// (bias, residual and activation in f32, as the contract asks) and narrows the output once.
// The f32 twin packs its weights at prepare from the exactly widened 16-bit weights, so these
// hold f32 weights (packed_bytes() says so): gemm, direct's AMX path and bf16 direct on
// blocks keep weights 16-bit in memory and have native half arithmetic. Knobs are the f32
// twin's.
#include <algorithm>
#include <memory>
#include <vector>

#include "algo/conv/conv_impl.h"
#include "algo/conv/depthwise_nchwc_f32.h"
#include "algo/microkernels/h16-vblock/h16_vblock.h"
#include "algo/microkernels/h16-vcvt/h16_vcvt.h"
#include "dlas/algo/eltwise.h"
#include "dlas/algo/hconv.h"
#include "dlas/core/error.h"
#include "dlas/hw/thread_pool.h"

namespace dlas {
namespace {

size_t round64(size_t b) { return (b + 63) / 64 * 64; }

// The whole tensor widened; with a blocked layout (the twin's blocked implementation on an
// AVX-512 path), straight into f32 channel blocks and narrowed straight back (h16-vblock),
// so the twin's fastest kernels run with no reorder around them.
class PreparedWidenedHConv final : public PreparedH16Conv {
 public:
  PreparedWidenedHConv(const ConvProblem& p, std::unique_ptr<PreparedConv> inner, Isa isa,
                       Layout x_layout, Layout y_layout)
      : p_(p),
        inner_(std::move(inner)),
        isa_(isa),
        x_layout_(x_layout),
        y_layout_(y_layout),
        vblock_(x_layout == p.x_layout && y_layout == p.y_layout
                    ? nullptr
                    : &ukernel::h16_vblock_for(p.w_type, isa)) {
    nx_ = static_cast<size_t>(layout_numel(p.n, p.c, p.h * p.w, x_layout));
    ny_ = static_cast<size_t>(layout_numel(p.n, p.k, p.oh() * p.ow(), y_layout));
  }

  size_t workspace_bytes(int threads) const override {
    return round64(nx_ * 4) + round64(ny_ * 4) * (p_.epilogue.residual ? 2 : 1) +
           inner_->workspace_bytes(threads);
  }

  void run_typed(const uint16_t* x, uint16_t* y, const uint16_t* residual, void* workspace,
                 ThreadPool& pool) const override {
    char* ws = static_cast<char*>(workspace);
    float* xf = reinterpret_cast<float*>(ws);
    ws += round64(nx_ * 4);
    float* yf = reinterpret_cast<float*>(ws);
    ws += round64(ny_ * 4);
    float* rf = nullptr;
    if (p_.epilogue.residual) {
      rf = reinterpret_cast<float*>(ws);
      ws += round64(ny_ * 4);
    }
    const int64_t hw = p_.h * p_.w, ohw = p_.oh() * p_.ow();
    // Where the twin's layout is the problem's (NCHW, or a blocked 16-bit problem), the
    // conversions are flat; else NCHW 16-bit rows go into and come out of f32 blocks.
    if (x_layout_ == p_.x_layout)
      widen_h16(p_.w_type, isa_, nx_, x, xf, pool);
    else
      to_blocks(x, p_.c, hw, xf, pool);
    if (rf && y_layout_ == p_.y_layout)
      widen_h16(p_.w_type, isa_, ny_, residual, rf, pool);
    else if (rf)
      to_blocks(residual, p_.k, ohw, rf, pool);
    inner_->run(xf, yf, rf, ws, pool);
    if (y_layout_ == p_.y_layout) {
      narrow_h16(p_.w_type, isa_, ny_, yf, y, pool);
      return;
    }
    const int64_t blk = static_cast<int64_t>(ukernel::kH16Block), cb = (p_.k + blk - 1) / blk;
    pool.parallel_for(static_cast<size_t>(p_.n * cb), [&](size_t i) {
      const int64_t n = static_cast<int64_t>(i) / cb, b = static_cast<int64_t>(i) % cb;
      vblock_->narrow(static_cast<size_t>(ohw), yf + (n * cb + b) * ohw * blk,
                      static_cast<size_t>(std::min(blk, p_.k - b * blk)),
                      y + (n * p_.k + b * blk) * ohw, static_cast<size_t>(ohw));
    });
  }

  size_t packed_bytes() const override { return inner_->packed_bytes(); }
  ConvCompute compute() const override { return ConvCompute::kEmulated; }

 private:
  // c NCHW 16-bit channels of hw pixels per image -> f32 blocks, parallel over blocks.
  void to_blocks(const uint16_t* x, int64_t c, int64_t hw, float* xf, ThreadPool& pool) const {
    const int64_t blk = static_cast<int64_t>(ukernel::kH16Block), cb = (c + blk - 1) / blk;
    pool.parallel_for(static_cast<size_t>(p_.n * cb), [&](size_t i) {
      const int64_t n = static_cast<int64_t>(i) / cb, b = static_cast<int64_t>(i) % cb;
      vblock_->widen(static_cast<size_t>(hw), x + (n * c + b * blk) * hw, static_cast<size_t>(hw),
                     static_cast<size_t>(std::min(blk, c - b * blk)), xf + (n * cb + b) * hw * blk);
    });
  }

  ConvProblem p_;
  std::unique_ptr<PreparedConv> inner_;
  Isa isa_;
  Layout x_layout_, y_layout_;        // the twin's
  const ukernel::H16Vblock* vblock_;  // where the twin's layouts differ from the problem's
  size_t nx_, ny_;
};

// Depthwise: every output channel reads only its own input channel(s), so the widened twin
// runs per chunk of channels, each thread on its own chunks with its own scratch: a chunk's
// planes are widened, convolved and narrowed while they sit in the thread's cache, and the
// tensor makes one trip through memory at 16 bits instead of three at 32. One prepared f32
// conv per chunk (its weights and bias slice), run on the serial pool. Where the path has a
// 16-channel blocked layout (AVX-512: nchw16c) and the twin runs it, a chunk is whole blocks
// and the twin is the blocked one, channels as vector lanes (f32's fastest depthwise
// kernels; the NCHW one vectorises along rows, poorly on 14x14 and 7x7 planes): the 16-bit
// rows are widened straight into f32 blocks and the blocks narrowed straight back into rows
// (h16-vblock), in the thread's cache.
class PreparedChunkedDepthwiseHConv final : public PreparedH16Conv {
 public:
  // layout: the twin's (twin_problem's).
  PreparedChunkedDepthwiseHConv(const ConvProblem& p, const float* wf, const float* bias,
                                const ConvAlgorithm& twin, const Knobs& knobs, Isa isa,
                                Layout layout)
      : p_(p),
        cvt_(&ukernel::h16_vcvt_for(p.w_type, isa)),
        vblock_(layout == Layout::kNchw || p.is_blocked()
                    ? nullptr
                    : &ukernel::h16_vblock_for(p.w_type, isa)),
        layout_(layout) {
    mult_ = p.k / p.c;
    const int64_t taps = p.kh * p.kw;
    const int64_t blk = layout_block(layout);
    const int64_t bytes_per_ch = (p.h * p.w + mult_ * p.oh() * p.ow()) * 4;
    int64_t cs = kChunkBytes / bytes_per_ch;     // channels per chunk: in + out planes in ~L2/4
    if (cs >= 32) cs = cs / 16 * 16;             // whole vectors for the channel-blocked kernels
    if (cs > (p.c + 3) / 4) cs = (p.c + 3) / 4;  // at least 4 chunks to share out
    if (cs < 2) cs = 2;
    if (blocked()) cs = std::max(blk, cs / blk * blk);  // whole blocks but the last chunk's
    for (int64_t c0 = 0; c0 < p.c;) {
      int64_t n = p.c - c0 < cs ? p.c - c0 : cs;
      if (p.c - c0 - n == 1) ++n;  // no one-channel remainder (groups must stay > 1)
      ConvProblem q = p.as_f32();
      q.n = 1, q.c = n, q.k = n * mult_, q.groups = n;
      if (blocked()) q.set_layouts(layout_, layout_);
      chunks_.push_back(
          {c0, n,
           twin.prepare(
               q, ConvWeights::f32(wf + c0 * mult_ * taps, bias ? bias + c0 * mult_ : nullptr),
               knobs, base_isa(isa))});
      max_ch_ = n > max_ch_ ? n : max_ch_;
      inner_ws_ = std::max(inner_ws_, chunks_.back().conv->workspace_bytes(1));
      c0 += n;
    }
  }

  size_t workspace_bytes(int threads) const override {
    return static_cast<size_t>(threads) * slot_bytes();
  }
  size_t packed_bytes() const override {
    size_t b = 0;
    for (const Chunk& c : chunks_) b += c.conv->packed_bytes();
    return b;
  }
  ConvCompute compute() const override { return ConvCompute::kEmulated; }

  void run_typed(const uint16_t* x, uint16_t* y, const uint16_t* residual, void* workspace,
                 ThreadPool& pool) const override {
    const int64_t threads = pool.threads();
    const int64_t nch = static_cast<int64_t>(chunks_.size()), items = p_.n * nch;
    const int64_t hw = p_.h * p_.w, ohw = p_.oh() * p_.ow();
    pool.parallel_for(static_cast<size_t>(threads), [&](size_t t) {
      int64_t b, e;
      chunk_range(items, threads, static_cast<int64_t>(t), &b, &e);
      char* ws = static_cast<char*>(workspace) + static_cast<int64_t>(t) * slot_bytes();
      float* xf = reinterpret_cast<float*>(ws);
      float* yf = xf + in_bytes() / 4;
      float* rf = yf + out_bytes() / 4;  // the residual (NCHW) or the blocked input
      float* yb = rf + in_bytes() / 4;   // the blocked output
      char* inner_ws = reinterpret_cast<char*>(yb) + out_bytes();
      for (int64_t it = b; it < e; ++it) {
        const Chunk& c = chunks_[static_cast<size_t>(it % nch)];
        const int64_t n = it / nch;
        const size_t nx = static_cast<size_t>(c.n * hw),
                     ny = static_cast<size_t>(c.n * mult_ * ohw);
        const int64_t yoff = (n * p_.k + c.c0 * mult_) * ohw;
        if (p_.is_blocked()) {  // 16-bit blocks -> f32 blocks -> blocked twin -> 16-bit blocks
          const int64_t blk = static_cast<int64_t>(ukernel::kH16Block);
          const int64_t cb = (p_.c + blk - 1) / blk, lanes = (c.n + blk - 1) / blk * blk;
          cvt_->widen(static_cast<size_t>(lanes * hw), x + (n * cb + c.c0 / blk) * hw * blk, rf);
          c.conv->run(rf, yb, nullptr, inner_ws, ThreadPool::serial());
          cvt_->narrow(static_cast<size_t>(lanes * ohw), yb, y + (n * cb + c.c0 / blk) * ohw * blk);
          continue;
        }
        if (blocked()) {  // 16-bit rows -> f32 blocks -> blocked twin -> 16-bit rows
          const int64_t blk = static_cast<int64_t>(ukernel::kH16Block);
          for (int64_t b0 = 0; b0 < c.n; b0 += blk)
            vblock_->widen(static_cast<size_t>(hw), x + (n * p_.c + c.c0 + b0) * hw,
                           static_cast<size_t>(hw), static_cast<size_t>(std::min(blk, c.n - b0)),
                           rf + b0 * hw);
          c.conv->run(rf, yb, nullptr, inner_ws, ThreadPool::serial());
          for (int64_t b0 = 0; b0 < c.n; b0 += blk)
            vblock_->narrow(static_cast<size_t>(ohw), yb + b0 * ohw,
                            static_cast<size_t>(std::min(blk, c.n - b0)), y + yoff + b0 * ohw,
                            static_cast<size_t>(ohw));
          continue;
        }
        cvt_->widen(nx, x + (n * p_.c + c.c0) * hw, xf);
        if (residual) cvt_->widen(ny, residual + yoff, rf);
        c.conv->run(xf, yf, residual ? rf : nullptr, inner_ws, ThreadPool::serial());
        cvt_->narrow(ny, yf, y + yoff);
      }
    });
  }

 private:
  static constexpr int64_t kChunkBytes = 512 * 1024;
  struct Chunk {
    int64_t c0, n;
    std::unique_ptr<PreparedConv> conv;
  };
  bool blocked() const { return layout_ != Layout::kNchw; }
  // A chunk's input and output planes, whole blocks when blocked.
  size_t in_bytes() const {
    return round64(static_cast<size_t>(blocked_channels(max_ch_, layout_) * p_.h * p_.w * 4));
  }
  size_t out_bytes() const {
    return round64(
        static_cast<size_t>(blocked_channels(max_ch_ * mult_, layout_) * p_.oh() * p_.ow() * 4));
  }
  size_t slot_bytes() const { return 2 * in_bytes() + 2 * out_bytes() + round64(inner_ws_); }
  static void chunk_range(int64_t n, int64_t chunks, int64_t t, int64_t* b, int64_t* e) {
    *b = n * t / chunks;
    *e = n * (t + 1) / chunks;
  }

  ConvProblem p_;
  const ukernel::H16Vcvt* cvt_;
  const ukernel::H16Vblock* vblock_;  // blocked only
  Layout layout_;                     // the twin's (and the chunk scratch's) layout
  int64_t mult_ = 1, max_ch_ = 0;
  size_t inner_ws_ = 0;
  std::vector<Chunk> chunks_;
};

class WidenedHConvAlgorithm final : public ConvAlgorithm {
 public:
  explicit WidenedHConvAlgorithm(std::string_view twin) : twin_name_(twin) {}

  std::string_view name() const override { return twin_name_; }
  bool supports(const ConvProblem& p) const override {
    return (p.w_type == DType::kF16 || p.w_type == DType::kBF16) && twin().supports(p.as_f32());
  }
  KnobSpace knob_space(const ConvProblem& p, Isa isa) const override {
    return twin().knob_space(twin_problem(p, isa), base_isa(isa));
  }
  Knobs default_knobs(const ConvProblem& p, Isa isa) const override {
    Knobs k = twin().default_knobs(twin_problem(p, isa), base_isa(isa));
    // The native bf16 tiles run along rows only: their own tile where the twin's default
    // takes whole-row tiles (ph > 1) on small planes.
    if (twin_name_ == "direct" && hconv_detail::native_blocked_direct_applies(p, isa)) {
      auto ph = k.find("ph");
      if (ph != k.end() && ph->second > 1) {
        const Knobs native = hconv_detail::native_blocked_direct_default_knobs(p, isa);
        k["nv"] = native.at("nv"), k["pw"] = native.at("pw"), ph->second = 1;
      }
    }
    return k;
  }
  std::unique_ptr<PreparedConv> prepare(const ConvProblem& p, const ConvWeights& w,
                                        const Knobs& knobs, Isa isa) const override {
    p.validate();
    DLAS_CHECK(twin().supports(p.as_f32()), ErrorKind::kUnsupported, "16-bit ", twin_name_,
               " conv does not support ", p.key());
    // bf16 on blocks with AVX512-BF16: the native vdpbf16ps tiles, with the twin's knobs.
    if (twin_name_ == "direct" && hconv_detail::native_blocked_direct_applies(p, isa)) {
      knob_space(p, isa).validate(knobs, "bf16 direct " + p.key());
      return hconv_detail::prepare_native_blocked_direct(p, w, knobs, isa);
    }
    // bf16 depthwise on blocks: the blocked tiles read and write bf16 themselves.
    if (twin_name_ == "depthwise" && bf16_blocked_depthwise_applies(p, isa)) {
      knob_space(p, isa).validate(knobs, "bf16 depthwise " + p.key());
      return prepare_bf16_blocked_depthwise(p, w, knobs, isa);
    }
    std::vector<float> wf(static_cast<size_t>(p.weight_count()));
    ukernel::h16_vcvt_for(p.w_type, isa).widen(wf.size(), w.half_data(), wf.data());
    if (twin_name_ == "depthwise" && p.is_depthwise() &&
        (!p.is_blocked() || (p.k == p.c && !p.epilogue.residual && p.x_layout == p.y_layout)))
      return std::make_unique<PreparedChunkedDepthwiseHConv>(p, wf.data(), w.bias, twin(), knobs,
                                                             isa, twin_problem(p, isa).x_layout);
    const ConvProblem q = twin_problem(p, isa);
    return std::make_unique<PreparedWidenedHConv>(
        p, twin().prepare(q, ConvWeights::f32(wf.data(), w.bias), knobs, base_isa(isa)), isa,
        q.x_layout, q.y_layout);
  }

 private:
  // The f32 problem the twin runs: p widened, in the twin's blocked layout where the path's
  // blocks are 16 channels (the h16-vblock conversions) and the twin runs it, else NCHW. A
  // chunked depthwise conv goes blocked with one channel per group and no residual only (no
  // zoo model has one there).
  ConvProblem twin_problem(const ConvProblem& p, Isa isa) const {
    ConvProblem q = p.as_f32();
    if (p.is_blocked()) return q;
    if (twin_name_ == "depthwise" && p.is_depthwise() && (p.k != p.c || p.epilogue.residual))
      return q;
    // The channel-block conversions (h16-vblock) make 16-channel blocks: AVX-512 paths.
    if (native_blocked_layout(base_isa(isa)) != Layout::kNchw16c) return q;
    ConvProblem qb = q;
    // Fewer input channels than a block (stems): the input stays NCHW, as in f32 plans
    // (a 3-channel stem on 16-lane blocks would multiply 13 zero channels).
    if (p.c < 16 && twin_name_ != "depthwise") {
      qb.set_layouts(Layout::kNchw, Layout::kNchw16c);
      if (twin().supports(qb)) return qb;
    }
    qb.set_layouts(Layout::kNchw16c, Layout::kNchw16c);
    return twin().supports(qb) ? qb : q;
  }
  const ConvAlgorithm& twin() const {
    const ConvAlgorithm* a = find_conv_algorithm(twin_name_);
    DLAS_CHECK(a != nullptr, ErrorKind::kInternal, "no f32 conv algorithm ", twin_name_);
    return *a;
  }
  std::string_view twin_name_;
};

}  // namespace

const ConvAlgorithm& hconv_detail::widened_direct_hconv_algorithm() {
  static const WidenedHConvAlgorithm a("direct");
  return a;
}
const ConvAlgorithm& spatial_pack_hconv_algorithm() {
  static const WidenedHConvAlgorithm a("spatial-pack");
  return a;
}
const ConvAlgorithm& winograd_hconv_algorithm() {
  static const WidenedHConvAlgorithm a("winograd");
  return a;
}
const ConvAlgorithm& depthwise_hconv_algorithm() {
  static const WidenedHConvAlgorithm a("depthwise");
  return a;
}

}  // namespace dlas

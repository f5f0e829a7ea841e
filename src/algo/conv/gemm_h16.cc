// `gemm` for 16-bit tensors: per image, group and block of nc output pixels,
// C[Kg][nc] (f32, per-thread scratch) = W[Kg][R] x im2col(x)[R][nc], kc reduction rows at a
// time, then per output row bias + residual + activation in f32 (apply_epilogue) and one
// rounding to the type. Weights are packed once, 16-bit, into MR-row panels; the input block
// is im2col'ed 16-bit into NR-column panels. Three compute paths, chosen by the ISA:
//   emulated     (no half arithmetic for the type): the panels are widened to f32 (F16C /
//                shifts, h16_vcvt.h) right before use -- each A panel once per kc block and
//                pixel block, each B block once -- and the f32 GEMM microkernels run;
//   native-fp16  (avx512-fp16, f16): vfmadd231ph kernels, half accumulators added into the
//                f32 C tile every `flush` reduction steps;
//   native-bf16  (avx512-bf16 and up, bf16): vdpbf16ps kernels, or AMX tdpbf16ps tiles on
//                the amx path, f32 accumulators; packing interleaves pairs of reduction
//                steps (kp = 2) and the AMX weight panels hold 32 steps per tile row.
// Knobs: ukernel (this path's kernel list), kc, nc, flush (native-fp16 only).
#include <cstring>
#include <limits>
#include <memory>
#include <string>
#include <string_view>

#include "algo/conv/conv_impl.h"
#include "algo/conv/gemm_common.h"
#include "algo/conv/gemm_h16.h"
#include "algo/microkernels/h16-vcvt/h16_vcvt.h"
#include "dlas/core/aligned_vector.h"
#include "dlas/core/error.h"
#include "dlas/hw/amx.h"
#include "dlas/hw/thread_pool.h"

namespace dlas {
namespace {

constexpr int64_t kGatherMaxWidth = 16;

using conv_detail::chunk_range;
using conv_detail::div_up;
using conv_detail::round_up;
using conv_detail::slot_floats;

class PreparedGemmHConv final : public PreparedH16Conv {
 public:
  // Exactly one of native / f32 is set.
  PreparedGemmHConv(const ConvProblem& hp, const uint16_t* w, const float* bias, const Knobs& kn,
                    Isa isa, const ukernel::H16GemmUkernel* native,
                    const ukernel::F32GemmUkernel* f32)
      : p_(hp),
        type_(hp.w_type),
        base_(base_isa(isa)),
        cvt_(&ukernel::h16_vcvt_for(hp.w_type, isa)),
        native_(native),
        f32_(f32) {
    const ConvProblem& p = p_;
    mr_ = native ? native->mr : f32->mr;
    nr_ = native ? native->nr : f32->nr;
    kp_ = native ? native->kp : 1;
    const int64_t kb = native ? native->kblock : 1;
    kg_ = p.k_per_group(), cg_ = p.c_per_group();
    r_ = cg_ * p.kh * p.kw;
    rp_ = round_up(r_, kb);
    ohw_ = p.oh() * p.ow();
    kc_ = round_up(kn.at("kc") < rp_ ? kn.at("kc") : rp_, kb);
    nc_ = round_up(kn.at("nc"), nr_);
    if (nc_ > round_up(ohw_, nr_)) nc_ = round_up(ohw_, nr_);
    flush_ = kn.count("flush") ? kn.at("flush") : 0;
    panels_ = div_up(kg_, mr_);
    // Weights [K][R] -> [g][panel][R rounded to kblock][MR] in blocks of kblock steps
    // (h16_gemm.h), by the native kernel's packing; the emulated path widens blocks of 1.
    const ukernel::H16GemmPackFn pack = native ? native->pack : &ukernel::h16_gemm_pack_a<1>;
    wpack_.assign(static_cast<size_t>(p.groups * panels_ * rp_ * mr_), 0);
    for (int64_t g = 0; g < p.groups; ++g)
      for (int64_t panel = 0; panel < panels_; ++panel) {
        const int64_t k0 = panel * mr_, m = kg_ - k0 < mr_ ? kg_ - k0 : mr_;
        pack(static_cast<size_t>(mr_), static_cast<size_t>(m), static_cast<size_t>(r_),
             w + (g * kg_ + k0) * r_, static_cast<size_t>(r_),
             wpack_.data() + (g * panels_ + panel) * rp_ * mr_);
      }
    bias_.assign(static_cast<size_t>(p.k), 0.f);
    if (bias) bias_.assign(bias, bias + p.k);
    for (int64_t kk = 0; kk < kc_; ++kk) panel_off_.push_back(kk * nr_);
    taps_ = conv_detail::conv_taps(p);
    // Planes at most kGatherMaxWidth wide: row segments are too short for the segment walk
    // of im2col_row to pay off, so pack_b looks every pixel up in a per-tap table of input
    // offsets within a channel plane (-1: padding).
    if (p.ow() <= kGatherMaxWidth) {
      gather_.reserve(static_cast<size_t>(p.kh * p.kw * ohw_));
      for (int64_t ky = 0; ky < p.kh; ++ky)
        for (int64_t kx = 0; kx < p.kw; ++kx)
          for (int64_t q = 0; q < ohw_; ++q) {
            const int64_t iy = q / p.ow() * p.stride_h + ky * p.dil_h - p.pad_t;
            const int64_t ix = q % p.ow() * p.stride_w + kx * p.dil_w - p.pad_l;
            const bool in = iy >= 0 && iy < p.h && ix >= 0 && ix < p.w;
            gather_.push_back(in ? static_cast<int32_t>(iy * p.w + ix) : -1);
          }
    }
  }

  size_t workspace_bytes(int threads) const override {
    return static_cast<size_t>(threads * slot_floats_total()) * sizeof(float);
  }
  size_t packed_bytes() const override { return wpack_.size() * 2 + bias_.size() * 4; }
  ConvCompute compute() const override {
    return native_ ? native_->compute : ConvCompute::kEmulated;
  }

  void run_typed(const uint16_t* x, uint16_t* y, const uint16_t* residual, void* workspace,
                 ThreadPool& pool) const override {
    float* ws = static_cast<float*>(workspace);
    const int64_t threads = pool.threads();
    const int64_t images = p_.n * p_.groups;
    // Fewer pixel blocks than threads (small late layers): narrower blocks first, so each
    // thread packs only its own pixels; a plane of one NR panel also splits its
    // output-channel panels (each thread then packs the same small block).
    int64_t nc = nc_;
    if (images * div_up(ohw_, nc) < threads)
      nc = round_up(div_up(ohw_, div_up(threads, images)), nr_);
    const int64_t nblocks = div_up(ohw_, nc);
    const int64_t base = images * nblocks;
    int64_t mchunks = base >= threads ? 1 : div_up(threads, base);
    if (mchunks > panels_) mchunks = panels_;
    const int64_t items = base * mchunks;
    pool.parallel_for(static_cast<size_t>(threads), [&](size_t t) {
      int64_t b, e;
      chunk_range(items, threads, static_cast<int64_t>(t), &b, &e);
      float* slot = ws + static_cast<int64_t>(t) * slot_floats_total();
      for (int64_t it = b; it < e; ++it) {
        const int64_t mc = it % mchunks, rest = it / mchunks;
        const int64_t nb = rest % nblocks, ng = rest / nblocks;
        int64_t ip0, ip1;
        chunk_range(panels_, mchunks, mc, &ip0, &ip1);
        const int64_t p0 = nb * nc;
        block(x, y, residual, ng / p_.groups, ng % p_.groups, p0, ohw_ - p0 < nc ? ohw_ - p0 : nc,
              ip0, ip1, slot);
      }
    });
  }

 private:
  // Scratch slot: 16-bit B block (nc x kc), f32 B block and f32 A panel (emulated), f32 C
  // block (all channel panels x nc), one f32 residual row, kp 16-bit im2col rows.
  int64_t bq_floats() const { return slot_floats(div_up(nc_ * kc_, 2)); }
  int64_t bf_floats() const { return native_ ? 0 : slot_floats(nc_ * kc_); }
  int64_t af_floats() const { return native_ ? 0 : slot_floats(kc_ * mr_); }
  int64_t c_floats() const { return slot_floats(panels_ * mr_ * nc_); }
  int64_t rb_floats() const { return slot_floats(div_up(kp_ * nc_, 2)); }
  int64_t slot_floats_total() const {
    return bq_floats() + bf_floats() + af_floats() + c_floats() + slot_floats(nc_) + rb_floats();
  }

  // out[i] = a[i] | b[i] << 16: two 16-bit rows as pairs (a vectorizable loop: no aliasing).
  static void interleave_pairs(const uint16_t* __restrict a, const uint16_t* __restrict b,
                               int64_t n, uint32_t* __restrict out) {
    for (int64_t i = 0; i < n; ++i)
      out[i] = static_cast<uint32_t>(a[i]) | static_cast<uint32_t>(b[i]) << 16;
  }

  // im2col of reduction rows [r0, r0 + rows) (rows a multiple of kblock; rows past R zero) for
  // the pixel block [p0, p0 + ncols) into NR-column panels: panel j at buf + j * rows * NR,
  // element (r, col) at ((r / kp) * NR + col) * kp + r % kp. Each k group's kp rows are
  // gathered whole (rowbuf: kp rows of the block's panel width), then copied or interleaved
  // into every panel.
  void pack_b(const uint16_t* img, int64_t p0, int64_t ncols, int64_t r0, int64_t rows,
              uint16_t* buf, uint16_t* rowbuf) const {
    const int64_t npanels = div_up(ncols, nr_), width = npanels * nr_;
    int nsegs = 0;
    const conv_detail::PixelSegment* segs =
        gather_.empty() ? conv_detail::block_segments(p0, p0 + ncols, p_.ow(), &nsegs) : nullptr;
    for (int64_t rr = 0; rr < rows; rr += kp_) {
      for (int64_t e = 0; e < kp_; ++e) {
        uint16_t* row = rowbuf + e * width;
        const int64_t r = r0 + rr + e;
        if (r >= r_) {
          std::memset(row, 0, static_cast<size_t>(width) * 2);
          continue;
        }
        if (!gather_.empty()) {  // narrow planes: one table lookup per pixel
          const int32_t* ix = gather_.data() + (r % (p_.kh * p_.kw)) * ohw_ + p0;
          const uint16_t* chan = img + taps_[static_cast<size_t>(r)].chan_off;
          for (int64_t i = 0; i < ncols; ++i) row[i] = ix[i] >= 0 ? chan[ix[i]] : uint16_t{0};
        } else {
          conv_detail::im2col_row(
              p_, taps_[static_cast<size_t>(r)], img, segs, nsegs, row,
              [](const uint16_t* __restrict src, int64_t sw, int64_t count,
                 uint16_t* __restrict dst) {  // short runs: inline loops, not library calls
                if (sw == 1) {
                  for (int64_t i = 0; i < count; ++i) dst[i] = src[i];
                } else {
                  for (int64_t i = 0; i < count; ++i) dst[i] = src[i * sw];
                }
              },
              [](uint16_t* dst, int64_t count) {
                for (int64_t i = 0; i < count; ++i) dst[i] = 0;
              });
        }
        if (width > ncols) std::memset(row + ncols, 0, static_cast<size_t>(width - ncols) * 2);
      }
      for (int64_t j = 0; j < npanels; ++j) {
        uint16_t* dst = buf + j * rows * nr_ + rr * nr_;
        const uint16_t* s0 = rowbuf + j * nr_;
        if (kp_ == 1) {
          std::memcpy(dst, s0, static_cast<size_t>(nr_) * 2);
        } else {  // kp == 2: pairs (row rr, row rr + 1) per column
          interleave_pairs(s0, s0 + width, nr_, reinterpret_cast<uint32_t*>(dst));
        }
      }
    }
  }

  void block(const uint16_t* x, uint16_t* y, const uint16_t* residual, int64_t n, int64_t g,
             int64_t p0, int64_t ncols, int64_t ip0, int64_t ip1, float* slot) const {
    uint16_t* bq = reinterpret_cast<uint16_t*>(slot);
    float* bf = slot + bq_floats();
    float* af = bf + bf_floats();
    float* cb = af + af_floats();
    float* rrow = cb + c_floats();
    uint16_t* rowbuf = reinterpret_cast<uint16_t*>(rrow + slot_floats(nc_));
    const int64_t npanels = div_up(ncols, nr_);
    const uint16_t* img = x + (n * p_.c + g * cg_) * p_.h * p_.w;
    const uint16_t* wg = wpack_.data() + g * panels_ * rp_ * mr_;
    const float inf = std::numeric_limits<float>::infinity();
    for (int64_t r0 = 0; r0 < rp_; r0 += kc_) {
      const int64_t rows = rp_ - r0 < kc_ ? rp_ - r0 : kc_;
      const bool acc = r0 > 0;
      pack_b(img, p0, ncols, r0, rows, bq, rowbuf);
      if (!native_) cvt_->widen(static_cast<size_t>(npanels * rows * nr_), bq, bf);
      for (int64_t ip = ip0; ip < ip1; ++ip) {
        const int64_t m = kg_ - ip * mr_ < mr_ ? kg_ - ip * mr_ : mr_;
        const uint16_t* a = wg + ip * rp_ * mr_ + r0 * mr_;
        if (!native_) cvt_->widen(static_cast<size_t>(rows * mr_), a, af);
        for (int64_t j = 0; j < npanels; ++j) {
          const int64_t cols = ncols - j * nr_ < nr_ ? ncols - j * nr_ : nr_;
          float* c = cb + ip * mr_ * nc_ + j * nr_;
          if (native_)
            native_->fn(static_cast<size_t>(m), static_cast<size_t>(cols),
                        static_cast<size_t>(rows), a, bq + j * rows * nr_,
                        static_cast<size_t>(flush_), c, static_cast<size_t>(nc_), acc);
          else
            f32_->fn(static_cast<size_t>(m), static_cast<size_t>(cols), static_cast<size_t>(rows),
                     af, bf + j * rows * nr_, panel_off_.data(), c, static_cast<size_t>(nc_),
                     nullptr, acc, -inf, inf);
        }
      }
    }
    const int64_t k1 = ip1 * mr_ < kg_ ? ip1 * mr_ : kg_;
    for (int64_t kk = ip0 * mr_; kk < k1; ++kk) {
      const int64_t off = (n * p_.k + g * kg_ + kk) * ohw_ + p0;
      float* crow = cb + kk * nc_;
      if (residual) cvt_->widen(static_cast<size_t>(ncols), residual + off, rrow);
      apply_epilogue(base_, p_.epilogue, static_cast<size_t>(ncols), crow, bias_[g * kg_ + kk],
                     residual ? rrow : nullptr);
      cvt_->narrow(static_cast<size_t>(ncols), crow, y + off);
    }
  }

  ConvProblem p_;
  DType type_;
  Isa base_;
  const ukernel::H16Vcvt* cvt_;
  const ukernel::H16GemmUkernel* native_;
  const ukernel::F32GemmUkernel* f32_;
  int64_t mr_, nr_, kp_, kg_, cg_, r_, rp_, ohw_, kc_, nc_, flush_, panels_;
  AlignedVector<uint16_t> wpack_;
  std::vector<float> bias_;
  std::vector<int64_t> panel_off_;
  std::vector<conv_detail::ConvTap> taps_;
  std::vector<int32_t> gather_;  // [kh * kw][OH * OW] input offsets (narrow planes only)
};

KnobSpace gemm_hconv_space(const ConvProblem& p, Isa isa, bool with_ukernel) {
  KnobSpace s;
  const auto native = ukernel::h16_gemm_ukernels_for(p.w_type, isa);
  if (with_ukernel) {
    if (native.empty()) {
      KnobSpec k = conv_detail::ukernel_knob(base_isa(isa));
      k.doc = "emulated path: " + k.doc;
      s.knobs.push_back(k);
    } else {
      KnobSpec k{"ukernel", {}, "native microkernel (index:"};
      for (size_t i = 0; i < native.size(); ++i) {
        k.values.push_back(static_cast<int64_t>(i));
        k.doc += std::string(i ? ", " : " ") + std::to_string(i) + "=" + native[i]->name;
      }
      k.doc += ")";
      s.knobs.push_back(k);
    }
  }
  s.knobs.push_back({"kc", {64, 128, 256, 512, 1024, 8192}, "reduction rows per block"});
  s.knobs.push_back({"nc",
                     {32, 64, 128, 256, 512, 1024},
                     "output pixels per block (rounded up to NR; the f32 C block is Kg x nc)"});
  const bool half_acc = with_ukernel
                            ? !native.empty() && native.front()->compute == ConvCompute::kNativeFp16
                            : p.w_type == DType::kF16;
  if (half_acc)
    s.knobs.push_back({"flush",
                       {0, 8, 16, 32, 64, 128},
                       "reduction steps accumulated in half precision before adding into the "
                       "f32 C tile (0: once per kc block)"});
  return s;
}

class GemmHConvAlgorithm final : public ConvAlgorithm {
 public:
  std::string_view name() const override { return "gemm"; }
  bool supports(const ConvProblem& p) const override {
    return (p.w_type == DType::kF16 || p.w_type == DType::kBF16) && !p.is_blocked();
  }
  KnobSpace knob_space(const ConvProblem& p, Isa isa) const override {
    return gemm_hconv_space(p, isa, true);
  }
  Knobs default_knobs(const ConvProblem& p, Isa isa) const override {
    // nc: the f32 C block (Kg x nc) stays within ~128 KiB of L2 next to the B block. The
    // vector paths keep at least 128 pixels: the epilogue and the narrowing run per C row of
    // nc pixels, and 32-pixel rows cost mobilenetv2's 96->576 expand conv 40% (Zen 4).
    const int64_t kg = p.k_per_group();
    // kc: AMX tiles hold their accumulators for a whole call, so one call takes the whole
    // reduction (the tile configuration and the C round trip are paid once per block).
    const auto native = ukernel::h16_gemm_ukernels_for(p.w_type, isa);
    const bool amx = !native.empty() && native.front()->isa == Isa::kAmx;
    int64_t nc = 512;
    while (nc > (amx ? 32 : 128) && kg * nc > 32768) nc /= 2;
    // ukernel: on AMX, a plane of one pixel panel reads each weight panel once: the
    // weight-streaming kernel (prefetches ahead; it costs on planes that reuse the panel).
    // Elsewhere, a bf16 plane that fits the narrowest tile's columns takes that tile (the
    // widest would leave most lanes idle): vdpbf16ps's 28x16 on 4x4 and 2x2 planes.
    int64_t uk = 0;
    if (amx && p.oh() * p.ow() <= native.front()->nr) {
      for (size_t i = 0; i < native.size(); ++i)
        if (std::string_view(native[i]->name).find("32x32s__amx") != std::string_view::npos)
          uk = static_cast<int64_t>(i);
    } else if (!amx && !native.empty() && p.w_type == DType::kBF16) {
      for (size_t i = 1; i < native.size(); ++i)
        if (native[i]->isa == native.front()->isa && native[i]->nr < native[uk]->nr &&
            p.oh() * p.ow() <= native[i]->nr)
          uk = static_cast<int64_t>(i);
    }
    // The narrow tile's plane is one panel, so its B block is small: it takes the whole
    // reduction per call too (the C tile's round trip per kc block cost 15% on 4x4 planes).
    const bool narrow = uk > 0 && !amx;
    if (narrow) nc = 32;  // the smallest block: the plane is one 16-column panel
    Knobs k{{"ukernel", uk}, {"kc", amx || narrow ? 8192 : 256}, {"nc", nc}};
    // 32 half FMAs per accumulator between flushes: bounded error 32 * 2^-11 of sum |w x|
    // per output (about 2^-12 * sqrt(32) in practice); flushing costs ~1/16 of the FMAs.
    if (knob_space(p, isa).find("flush")) k["flush"] = 32;
    return k;
  }
  std::unique_ptr<PreparedConv> prepare(const ConvProblem& p, const ConvWeights& w,
                                        const Knobs& knobs, Isa isa) const override {
    p.validate();
    const uint16_t* weights = w.half_data();
    const float* bias = w.bias;
    knob_space(p, isa).validate(knobs, "gemm hconv " + p.key());
    const auto native = ukernel::h16_gemm_ukernels_for(p.w_type, isa);
    const int64_t u = knobs.at("ukernel");
    if (!native.empty()) {
      if (native[static_cast<size_t>(u)]->isa == Isa::kAmx) amx_require("bf16 gemm conv (AMX)");
      return std::make_unique<PreparedGemmHConv>(p, weights, bias, knobs, isa,
                                                 native[static_cast<size_t>(u)], nullptr);
    }
    return std::make_unique<PreparedGemmHConv>(p, weights, bias, knobs, isa, nullptr,
                                               &conv_detail::ukernel_from_knob(base_isa(isa), u));
  }
};

}  // namespace

namespace hconv_detail {
std::unique_ptr<PreparedConv> prepare_gemm_hconv_with(const ConvProblem& p, const ConvWeights& w,
                                                      const Knobs& knobs, Isa isa,
                                                      const ukernel::H16GemmUkernel& uk) {
  p.validate();
  DLAS_CHECK(uk.type == p.w_type, ErrorKind::kInvalidInput, uk.name, " is not a ",
             dtype_name(p.w_type), " kernel");
  Knobs k = knobs;
  k.erase("ukernel");
  if (uk.compute != ConvCompute::kNativeFp16) k.erase("flush");
  ConvProblem q = p;
  q.set_half(uk.compute == ConvCompute::kNativeFp16 ? DType::kF16 : DType::kBF16);
  gemm_hconv_space(q, isa, false).validate(k, "gemm hconv " + p.key());
  if (uk.isa == Isa::kAmx) amx_require("bf16 gemm conv (AMX)");
  return std::make_unique<PreparedGemmHConv>(p, w.half_data(), w.bias, k, isa, &uk, nullptr);
}
}  // namespace hconv_detail

const ConvAlgorithm& gemm_hconv_algorithm() {
  static const GemmHConvAlgorithm algo;
  return algo;
}

}  // namespace dlas

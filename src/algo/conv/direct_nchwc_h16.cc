// bf16 `direct` on 16-bit channel blocks (nchw16c holding bfloat16), native: vdpbf16ps
// register tiles (the bf16-nchwc microkernels) over output pixels x output-channel blocks,
// the f32 blocked direct kernel's design with pairs of input channels per step. The
// activations stay 16-bit from layer to layer (no widening, no reorder); each pixel's
// channel pair is one dword of its block, broadcast straight from the input.
//
//   prepare: weights packed per group of nv output blocks as [C blocks][KH][KW][8 pairs][nv]
//            [16 lanes][2] (zero past C and K, and across conv groups), bias padded to whole
//            blocks. Grouped convs (blocked_groups_supported: groups of whole blocks, or of
//            4+ channels dividing a block) reduce over their conv group's input blocks only.
//   run, per image: a padded input is copied into the workspace with the borders zeroed;
//            threads split the (block group, output row, run of tiles) items. A 1x1
//            stride-1 unpadded conv is a blocked GEMM: its rows are one run of H*W pixels.
// Applies to bf16 convs with a blocked input and output, the groups above and stride along
// W of 1 or 2, on paths with AVX512-BF16; every other blocked bf16 conv runs the widened f32 twin
// (widened_h16.cc). The clamp epilogues (none / relu / clip) are fused; any other activation
// (SiLU, ...) runs over each run of tiles stored in f32 on the stack, rounded once after it. Knobs
// are the twin's (nv, pw; a whole-row `ph` is the twin's only: the native tiles run along rows).
#include <algorithm>
#include <cstring>
#include <memory>
#include <vector>

#include "algo/conv/conv_impl.h"
#include "algo/microkernels/bf16-nchwc/bf16_nchwc.h"
#include "algo/microkernels/h16-vcvt/h16_vcvt.h"
#include "dlas/algo/hconv.h"
#include "dlas/core/aligned_vector.h"
#include "dlas/core/error.h"
#include "dlas/hw/thread_pool.h"

namespace dlas {
namespace {

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }
constexpr int64_t kB = 16;  // channels per block

bool flat_1x1(const ConvProblem& p) { return blocked_flat_1x1(p); }

class PreparedDirectNchwcBf16 final : public PreparedH16Conv {
 public:
  PreparedDirectNchwcBf16(const ConvProblem& p, const uint16_t* w, const float* bias,
                          const Knobs& kn, Isa isa, const ukernel::Bf16NchwcUkernels& set)
      : p_(p), isa_(isa), cvt_(&ukernel::h16_vcvt_for(DType::kBF16, isa)) {
    cbx_ = ceil_div(p.c, kB);
    ocb_ = ceil_div(p.k, kB);
    const int64_t cg = blocked_conv_groups(p, kB), ocb_g = ocb_ / cg;
    cbg_ = cbx_ / cg;
    nv_ =
        std::clamp<int64_t>(kn.at("nv"), 1, std::min<int64_t>(ocb_g, ukernel::kBf16NchwcMaxBlocks));
    const BlockedRowGeometry geo(p);
    oh_ = geo.oh, ow_ = geo.ow, rows_ = geo.rows, cols_ = geo.cols, hp_ = geo.hp, wp_ = geo.wp;
    flat_ = geo.flat, padded_ = geo.padded;
    for (int64_t g = 0; g < cg; ++g)
      for (int64_t j = 0; j < ocb_g; j += nv_)
        bgroups_.push_back({g * ocb_g + j, std::min(nv_, ocb_g - j), g * cbg_, 0});
    groups_ = static_cast<int64_t>(bgroups_.size());
    const int stride = flat_ ? 1 : static_cast<int>(p.stride_w);
    pw_ = std::min<int64_t>({kn.at("pw"), set.max_pixels(static_cast<int>(nv_)), cols_});
    pw_ = std::max<int64_t>(pw_, 1);
    tiles_ = ceil_div(cols_, pw_);
    for (int nv = 1; nv <= ukernel::kBf16NchwcMaxBlocks; ++nv)
      for (int px = 1; px <= pw_; ++px) kernels_[nv - 1][px - 1] = set.select(nv, px, stride);
    for (const BlockGroup& bg : bgroups_) {
      const int64_t last = cols_ - (tiles_ - 1) * pw_;
      DLAS_CHECK(kernel(bg.blocks, pw_) && kernel(bg.blocks, last), ErrorKind::kInternal,
                 "direct (bf16 blocks): no kernel for ", bg.blocks, " blocks x ", pw_, " pixels");
    }
    // Weights: per block group [cbg][kh][kw][8 pairs][blocks][16][2] over its conv group's
    // input blocks.
    const int64_t taps = p.kh * p.kw, cpg = p.c / p.groups, kpg = p.k / p.groups;
    int64_t offset = 0;
    for (BlockGroup& bg : bgroups_)
      bg.w_offset = offset, offset += cbg_ * taps * kB * bg.blocks * kB;
    w_.assign(static_cast<size_t>(offset), 0);
    for (const BlockGroup& bg : bgroups_) {
      uint16_t* wg = w_.data() + bg.w_offset;
      for (int64_t cb = 0; cb < cbg_; ++cb)
        for (int64_t t = 0; t < taps; ++t)
          for (int64_t q = 0; q < kB / 2; ++q)
            for (int64_t v = 0; v < bg.blocks; ++v)
              for (int64_t l = 0; l < kB; ++l)
                for (int64_t e = 0; e < 2; ++e) {
                  const int64_t oc = (bg.first_block + v) * kB + l,
                                ic = (bg.x_block + cb) * kB + 2 * q + e,
                                local = ic - oc / kpg * cpg;  // within oc's conv group
                  if (oc < p.k && ic < p.c && local >= 0 && local < cpg)
                    wg[((((cb * taps + t) * (kB / 2) + q) * bg.blocks + v) * kB + l) * 2 + e] =
                        w[(oc * cpg + local) * taps + t];
                }
    }
    bias_.assign(static_cast<size_t>(ocb_ * kB), 0.f);
    if (bias) std::copy(bias, bias + p.k, bias_.begin());
    spatial_ = split_spatially(
        oh_ * ow_,
        static_cast<int64_t>(sizeof(uint16_t)) * kB * (cbx_ * p.h * p.w + ocb_ * oh_ * ow_),
        static_cast<int64_t>(sizeof(uint16_t) * w_.size()));
  }

  size_t workspace_bytes(int) const override {
    return padded_ ? sizeof(uint16_t) * static_cast<size_t>(cbx_ * hp_ * wp_ * kB) : 0;
  }
  size_t packed_bytes() const override {
    return w_.size() * sizeof(uint16_t) + bias_.size() * sizeof(float);
  }
  ConvCompute compute() const override { return ConvCompute::kNativeBf16; }

  void run_typed(const uint16_t* in, uint16_t* out, const uint16_t* residual, void* workspace,
                 ThreadPool& pool) const override {
    const int64_t in_img = cbx_ * kB * p_.h * p_.w;
    const int64_t out_img = ocb_ * kB * oh_ * ow_;
    const Epilogue& e = p_.epilogue;
    const bool clamp = e.is_clamp();
    const Epilogue act{e.act, e.p0, e.p1, false};
    ukernel::Bf16NchwcArgs base;
    base.cb = static_cast<size_t>(cbg_);
    base.kh = static_cast<size_t>(p_.kh), base.kw = static_cast<size_t>(p_.kw);
    base.x_cbs = static_cast<size_t>(hp_ * wp_ * kB);
    base.x_khs = static_cast<size_t>(p_.dil_h * wp_ * kB);
    base.x_kws = static_cast<size_t>(p_.dil_w * kB);
    base.y_cbs = static_cast<size_t>(oh_ * ow_ * kB);
    base.lo = e.clamp_min(), base.hi = e.clamp_max();
    const int64_t sh = flat_ ? 1 : p_.stride_h, sw = flat_ ? 1 : p_.stride_w;
    for (int64_t img = 0; img < p_.n; ++img) {
      const uint16_t* x = in + img * in_img;
      if (padded_) {
        pad_blocked_image(x, static_cast<uint16_t*>(workspace), cbx_, kB, p_.h, p_.w, hp_, wp_,
                          p_.pad_t, p_.pad_l, pool);
        x = static_cast<const uint16_t*>(workspace);
      }
      uint16_t* y = out + img * out_img;
      const uint16_t* r = residual ? residual + img * out_img : nullptr;
      for_each_tile_run(
          pool, groups_, rows_, tiles_, spatial_,
          [&](int64_t g, int64_t row, int64_t t0, int64_t t1) {
            const BlockGroup& bg = bgroups_[static_cast<size_t>(g)];
            ukernel::Bf16NchwcArgs a = base;
            a.bias = bias_.data() + bg.first_block * kB;
            const int64_t y0 = bg.first_block * oh_ * ow_ * kB + row * cols_ * kB;
            // An activation the kernels do not fuse: runs of tiles stored in f32 on the stack
            // (at most kActivateFloats), activated and rounded once into the blocks.
            alignas(64) float scratch[kActivateFloats];
            const int64_t run =
                clamp ? t1 - t0 : std::max<int64_t>(1, kActivateFloats / (pw_ * bg.blocks * kB));
            for_each_tile_call(t0, t1, cols_, pw_, run, [&](int64_t c0, int64_t n, int64_t px) {
              const int64_t y_off = y0 + c0 * kB;
              a.r = r ? r + y_off : nullptr;
              a.tiles = static_cast<size_t>(n);
              const int64_t len = n * px * kB;  // elements of one block the run writes
              if (!clamp) a.yf = scratch, a.yf_cbs = static_cast<size_t>(len);
              const uint16_t* xt = x + (bg.x_block * hp_ * wp_ + (row * sh) * wp_ + c0 * sw) * kB;
              kernel(bg.blocks, px)(a, xt, w_.data() + bg.w_offset, y + y_off);
              if (!clamp)
                for (int64_t v = 0; v < bg.blocks; ++v) {
                  float* f = scratch + v * len;
                  apply_epilogue(isa_, act, static_cast<size_t>(len), f, 0.f, nullptr);
                  cvt_->narrow(static_cast<size_t>(len), f, y + y_off + v * oh_ * ow_ * kB);
                }
            });
          });
    }
  }

 private:
  ukernel::Bf16NchwcFn kernel(int64_t nv, int64_t px) const { return kernels_[nv - 1][px - 1]; }

  struct BlockGroup {
    int64_t first_block, blocks, x_block, w_offset;  // x_block: its conv group's first input block
  };
  // Floats of one run of tiles stored for an activation the kernels do not fuse (8 KiB: L1).
  static constexpr int64_t kActivateFloats = 2048;
  ConvProblem p_;
  Isa isa_;
  const ukernel::H16Vcvt* cvt_;  // the bf16 narrowing (non-clamp activations)
  int64_t cbx_ = 0, cbg_ = 0, ocb_ = 0, nv_ = 1, pw_ = 1, oh_ = 0, ow_ = 0;
  int64_t rows_ = 0, cols_ = 0, hp_ = 0, wp_ = 0, groups_ = 0, tiles_ = 0;
  bool flat_ = false, padded_ = false, spatial_ = false;
  ukernel::Bf16NchwcFn kernels_[ukernel::kBf16NchwcMaxBlocks][ukernel::kBf16NchwcMaxPixels] = {};
  std::vector<BlockGroup> bgroups_;
  AlignedVector<uint16_t> w_;
  AlignedVector<float> bias_;
};

}  // namespace

namespace hconv_detail {

bool native_blocked_direct_applies(const ConvProblem& p, Isa isa) {
  return p.w_type == DType::kBF16 && p.x_type == DType::kBF16 && p.y_type == DType::kBF16 &&
         p.x_layout == Layout::kNchw16c && p.y_layout == Layout::kNchw16c &&
         blocked_groups_supported(p, kB) && (flat_1x1(p) || p.stride_w <= 2) &&
         ukernel::bf16_nchwc_for(isa) != nullptr;
}

Knobs native_blocked_direct_default_knobs(const ConvProblem& p, Isa isa) {
  const ukernel::Bf16NchwcUkernels* set = ukernel::bf16_nchwc_for(isa);
  DLAS_CHECK(set != nullptr, ErrorKind::kUnsupported, "no bf16 blocked kernels on ", isa_name(isa));
  // As the f32 blocked default (most_fmas_per_load): per block count, the widest tile within
  // the registers spread evenly over a row's tiles, scored by dot products per load
  // (nv * pw / (nv + pw)) over the lanes the last block group really uses.
  const int64_t ocb = ceil_div(p.k, kB) / blocked_conv_groups(p, kB);  // per conv group
  const int64_t cols = flat_1x1(p) ? p.oh() * p.ow() : p.ow();
  const auto [best_nv, pw] = most_fmas_per_load(ocb, cols, ukernel::kBf16NchwcMaxBlocks,
                                                [&](int nv) { return set->max_pixels(nv); });
  return {{"nv", best_nv}, {"pw", pw}};
}

std::unique_ptr<PreparedConv> prepare_native_blocked_direct(const ConvProblem& p,
                                                            const ConvWeights& w,
                                                            const Knobs& knobs, Isa isa) {
  DLAS_CHECK(native_blocked_direct_applies(p, isa), ErrorKind::kUnsupported,
             "bf16 direct on blocks does not support ", p.key(), " on ", isa_name(isa));
  return std::make_unique<PreparedDirectNchwcBf16>(p, w.half_data(), w.bias, knobs, isa,
                                                   *ukernel::bf16_nchwc_for(isa));
}

}  // namespace hconv_detail

bool bf16_blocks_native(Isa isa) { return ukernel::bf16_nchwc_for(isa) != nullptr; }

}  // namespace dlas

// int8 `direct` on 8-bit channel blocks (nchw16c holding u8): vpdpbusd register tiles (the
// qs8-nchwc microkernels) over output pixels x output-channel blocks, the f32 blocked direct
// kernel's design with quads of input channels per step. The activations stay 8-bit and
// blocked from layer to layer (no packing, no reorder); each pixel's channel quad is one
// dword of its block, broadcast straight from the input, and the requantization (+ residual
// + clamp) is fused into the store.
//
//   prepare: weights packed per group of nv output blocks as [C blocks][KH][KW][4 quads][nv]
//            [16 lanes][4] (zero past C and K); per output channel init = bias - x_zp *
//            sum(w) and the requantization multiplier, padded to whole blocks (0).
//   run, per image: a padded input is copied into the workspace with the borders holding
//            x's zero point; threads split the (block group, output row, run of tiles)
//            items. A 1x1 stride-1 unpadded conv is a blocked GEMM: its rows are one run of
//            H*W pixels.
// Applies to int8 convs with u8 input, a blocked input and output, one group and stride along
// W of 1 or 2 (any stride for a 1x1 unpadded conv at stride 1). On a path without the
// kernels (below AVX512-VNNI) the same problems run the NCHW int8 conv between reorders.
// Knobs: nv (output blocks per tile) and pw (pixels per tile).
#include <algorithm>
#include <cstring>
#include <memory>
#include <vector>

#include "algo/conv/conv_impl.h"
#include "algo/conv/qs8_common.h"
#include "algo/microkernels/qs8-nchwc/qs8_nchwc.h"
#include "dlas/core/aligned_vector.h"
#include "dlas/core/error.h"
#include "dlas/hw/thread_pool.h"

namespace dlas {
namespace {

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }
constexpr int64_t kB = 16;  // channels per block

bool flat_1x1(const ConvProblem& p) { return blocked_flat_1x1(p); }

bool blocked_direct_supports(const ConvProblem& p) {
  return p.is_int8() && p.x_layout == Layout::kNchw16c && p.y_layout == Layout::kNchw16c &&
         p.quant.x.type == DType::kU8 && p.groups == 1 && (flat_1x1(p) || p.stride_w <= 2);
}

class PreparedDirectNchwcQs8 final : public qconv_detail::PreparedInt8Conv {
 public:
  PreparedDirectNchwcQs8(const ConvProblem& p, const ConvWeights& cw, const Knobs& kn,
                         const ukernel::QS8NchwcUkernels& set)
      : p_(p) {
    const int8_t* w = cw.int8_data();
    cbx_ = ceil_div(p.c, kB);
    ocb_ = ceil_div(p.k, kB);
    nv_ = std::clamp<int64_t>(kn.at("nv"), 1, std::min<int64_t>(ocb_, ukernel::kQS8NchwcMaxBlocks));
    const BlockedRowGeometry geo(p);
    oh_ = geo.oh, ow_ = geo.ow, rows_ = geo.rows, cols_ = geo.cols, hp_ = geo.hp, wp_ = geo.wp;
    flat_ = geo.flat, padded_ = geo.padded;
    for (int64_t j = 0; j < ocb_; j += nv_) bgroups_.push_back({j, std::min(nv_, ocb_ - j), 0});
    groups_ = static_cast<int64_t>(bgroups_.size());
    const int stride = flat_ ? 1 : static_cast<int>(p.stride_w);
    pw_ = std::min<int64_t>({kn.at("pw"), set.max_pixels(static_cast<int>(nv_)), cols_});
    pw_ = std::max<int64_t>(pw_, 1);
    tiles_ = ceil_div(cols_, pw_);
    for (int nv = 1; nv <= ukernel::kQS8NchwcMaxBlocks; ++nv)
      for (int px = 1; px <= pw_; ++px) kernels_[nv - 1][px - 1] = set.select(nv, px, stride);
    for (const BlockGroup& bg : bgroups_) {
      const int64_t last = cols_ - (tiles_ - 1) * pw_;
      DLAS_CHECK(kernel(bg.blocks, pw_) && kernel(bg.blocks, last), ErrorKind::kInternal,
                 "direct (int8 blocks): no kernel for ", bg.blocks, " blocks x ", pw_, " pixels");
    }
    // Weights: per block group [cbx][kh][kw][4 quads][blocks][16][4].
    const int64_t taps = p.kh * p.kw;
    int64_t offset = 0;
    for (BlockGroup& bg : bgroups_)
      bg.w_offset = offset, offset += cbx_ * taps * kB * bg.blocks * kB;
    w_.assign(static_cast<size_t>(offset), 0);
    for (const BlockGroup& bg : bgroups_) {
      int8_t* wg = w_.data() + bg.w_offset;
      for (int64_t cb = 0; cb < cbx_; ++cb)
        for (int64_t t = 0; t < taps; ++t)
          for (int64_t q = 0; q < kB / 4; ++q)
            for (int64_t v = 0; v < bg.blocks; ++v)
              for (int64_t l = 0; l < kB; ++l)
                for (int64_t e = 0; e < 4; ++e) {
                  const int64_t oc = (bg.first_block + v) * kB + l, ic = cb * kB + 4 * q + e;
                  if (oc < p.k && ic < p.c)
                    wg[((((cb * taps + t) * (kB / 4) + q) * bg.blocks + v) * kB + l) * 4 + e] =
                        w[(oc * p.c + ic) * taps + t];
                }
    }
    const qconv_detail::ChannelTerms terms =
        qconv_detail::channel_terms(p, w, cw.w_scale, cw.bias_s32);
    init_.assign(static_cast<size_t>(ocb_ * kB), 0);
    mult_.assign(static_cast<size_t>(ocb_ * kB), 0.f);
    std::copy(terms.init.begin(), terms.init.end(), init_.begin());
    std::copy(terms.mult.begin(), terms.mult.end(), mult_.begin());
    base_ = qconv_detail::base_params(p);
    spatial_ = split_spatially(oh_ * ow_, kB * (cbx_ * p.h * p.w + ocb_ * oh_ * ow_),
                               static_cast<int64_t>(w_.size()));
  }

  size_t workspace_bytes(int) const override {
    return padded_ ? static_cast<size_t>(cbx_ * hp_ * wp_ * kB) : 0;
  }
  size_t packed_bytes() const override {
    return w_.size() + init_.size() * sizeof(int32_t) + mult_.size() * sizeof(float);
  }

  void run(const void* in_v, void* out_v, const void* res_v, void* workspace,
           ThreadPool& pool) const override {
    const uint8_t* in = static_cast<const uint8_t*>(in_v);
    uint8_t* out = static_cast<uint8_t*>(out_v);
    const uint8_t* residual = static_cast<const uint8_t*>(res_v);
    const int64_t in_img = cbx_ * kB * p_.h * p_.w;
    const int64_t out_img = ocb_ * kB * oh_ * ow_;
    ukernel::QS8NchwcArgs base;
    base.cb = static_cast<size_t>(cbx_);
    base.kh = static_cast<size_t>(p_.kh), base.kw = static_cast<size_t>(p_.kw);
    base.x_cbs = static_cast<size_t>(hp_ * wp_ * kB);
    base.x_khs = static_cast<size_t>(p_.dil_h * wp_ * kB);
    base.x_kws = static_cast<size_t>(p_.dil_w * kB);
    base.y_cbs = static_cast<size_t>(oh_ * ow_ * kB);
    const int64_t sh = flat_ ? 1 : p_.stride_h, sw = flat_ ? 1 : p_.stride_w;
    const uint8_t xzp = static_cast<uint8_t>(p_.quant.x.zero_point);
    for (int64_t img = 0; img < p_.n; ++img) {
      const uint8_t* x = in + img * in_img;
      if (padded_) {
        pad_blocked_image(x, static_cast<uint8_t*>(workspace), cbx_, kB, p_.h, p_.w, hp_, wp_,
                          p_.pad_t, p_.pad_l, pool, xzp);
        x = static_cast<const uint8_t*>(workspace);
      }
      uint8_t* y = out + img * out_img;
      const uint8_t* r = residual ? residual + img * out_img : nullptr;
      for_each_tile_run(
          pool, groups_, rows_, tiles_, spatial_,
          [&](int64_t g, int64_t row, int64_t t0, int64_t t1) {
            const BlockGroup& bg = bgroups_[static_cast<size_t>(g)];
            ukernel::QS8NchwcArgs a = base;
            a.init = init_.data() + bg.first_block * kB;
            a.mult = mult_.data() + bg.first_block * kB;
            const int64_t y0 = bg.first_block * oh_ * ow_ * kB + row * cols_ * kB;
            for_each_tile_call(t0, t1, cols_, pw_, t1 - t0, [&](int64_t c0, int64_t n, int64_t px) {
              const int64_t y_off = y0 + c0 * kB;
              a.r = r ? r + y_off : nullptr;
              a.tiles = static_cast<size_t>(n);
              const uint8_t* xt = x + ((row * sh) * wp_ + c0 * sw) * kB;
              kernel(bg.blocks, px)(a, base_, xt, w_.data() + bg.w_offset, y + y_off);
            });
          });
    }
  }

 private:
  ukernel::QS8NchwcFn kernel(int64_t nv, int64_t px) const { return kernels_[nv - 1][px - 1]; }

  struct BlockGroup {
    int64_t first_block, blocks, w_offset;
  };
  ConvProblem p_;
  int64_t cbx_ = 0, ocb_ = 0, nv_ = 1, pw_ = 1, oh_ = 0, ow_ = 0;
  int64_t rows_ = 0, cols_ = 0, hp_ = 0, wp_ = 0, groups_ = 0, tiles_ = 0;
  bool flat_ = false, padded_ = false, spatial_ = false;
  ukernel::QS8NchwcFn kernels_[ukernel::kQS8NchwcMaxBlocks][ukernel::kQS8NchwcMaxPixels] = {};
  std::vector<BlockGroup> bgroups_;
  AlignedVector<int8_t> w_;
  AlignedVector<int32_t> init_;
  AlignedVector<float> mult_;
  ukernel::QS8GemmParams base_;
};

// The untuned tile: as the f32 blocked default (most_fmas_per_load), the widest tile within
// the registers spread evenly over a row's tiles, scored by dot products per load.
Knobs default_tile(const ConvProblem& p, const ukernel::QS8NchwcUkernels& set) {
  const int64_t ocb = ceil_div(p.k, kB);
  const int64_t cols = flat_1x1(p) ? p.oh() * p.ow() : p.ow();
  const auto [nv, pw] = most_fmas_per_load(ocb, cols, ukernel::kQS8NchwcMaxBlocks,
                                           [&](int v) { return set.max_pixels(v); });
  return {{"nv", nv}, {"pw", pw}};
}

// The int8 `direct` for blocked problems; NCHW ones go to the vector direct
// (spatial_pack_qs8.cc).
class DirectQConvByLayout final : public ConvAlgorithm {
 public:
  std::string_view name() const override { return "direct"; }
  bool supports(const ConvProblem& p) const override {
    if (!p.is_blocked()) return nchw().supports(p);
    return blocked_direct_supports(p);
  }
  KnobSpace knob_space(const ConvProblem& p, Isa isa) const override {
    if (!p.is_blocked()) return nchw().knob_space(p, isa);
    KnobSpace s;
    if (!ukernel::qs8_nchwc_for(isa)) return s;
    std::vector<int64_t> nvs, pws;
    for (int64_t v = 1; v <= ukernel::kQS8NchwcMaxBlocks; ++v) nvs.push_back(v);
    for (int64_t v : kBlockedTilePixels) pws.push_back(v);
    s.knobs.push_back({"nv", nvs, "output-channel blocks (16 channels each) per register tile"});
    s.knobs.push_back(
        {"pw", pws, "output pixels along a row per register tile (capped by the registers)"});
    return s;
  }
  Knobs default_knobs(const ConvProblem& p, Isa isa) const override {
    if (!p.is_blocked()) return nchw().default_knobs(p, isa);
    const ukernel::QS8NchwcUkernels* set = ukernel::qs8_nchwc_for(isa);
    return set ? default_tile(p, *set) : Knobs{};
  }
  std::unique_ptr<PreparedConv> prepare(const ConvProblem& p, const ConvWeights& w,
                                        const Knobs& knobs, Isa isa) const override {
    if (!p.is_blocked()) return nchw().prepare(p, w, knobs, isa);
    p.validate();
    DLAS_CHECK(blocked_direct_supports(p), ErrorKind::kUnsupported,
               "int8 direct on blocks does not support ", p.key());
    knob_space(p, isa).validate(knobs, "int8 direct conv " + p.key());
    const ukernel::QS8NchwcUkernels* set = ukernel::qs8_nchwc_for(isa);
    if (!set) return qconv_detail::prepare_int8_via_nchw(p, w, isa);
    Knobs k = default_tile(p, *set);
    for (const auto& [name, v] : knobs) k[name] = v;
    return std::make_unique<PreparedDirectNchwcQs8>(p, w, k, *set);
  }

 private:
  static const ConvAlgorithm& nchw() { return qconv_detail::vector_direct_qconv_algorithm(); }
};

}  // namespace

bool int8_blocks_native(Isa isa) { return ukernel::qs8_nchwc_for(isa) != nullptr; }

namespace qconv_detail {
const ConvAlgorithm& vector_or_nchwc_direct_qconv_algorithm() {
  static const DirectQConvByLayout algo;
  return algo;
}
}  // namespace qconv_detail

}  // namespace dlas

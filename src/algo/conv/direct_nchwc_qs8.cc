// int8 `direct` on 8-bit channel blocks (nchw16c or nchw8c holding u8): register tiles (the
// qs8-nchwc microkernels) over output pixels x output-channel blocks, the f32 blocked direct
// kernel's design with groups of input channels per step. The activations stay 8-bit and
// blocked from layer to layer; the requantization (+ residual + clamp) is fused into the
// store. Two kernel designs (qs8_nchwc.h):
//   - AVX512-VNNI, nchw16c: vpdpbusd on quads; each pixel's channel quad is one dword of its
//     block, broadcast straight from the input (no packing).
//   - AVX2, nchw8c: vpmaddwd on s16 pairs; the input is first widened to int16 (with its
//     padding) in the workspace, one pass over the input per image, and each pixel's
//     channel pair is one dword of the widened block.
//
//   prepare: weights packed per group of nv output blocks as [C blocks][KH][KW][groups][nv]
//            [lanes][4 bytes: kr channels] (zero past C and K); per output channel init =
//            bias - x_zp * sum(w) and the requantization multiplier, padded to whole blocks.
//   run, per image: a padded (and, on AVX2, widened) input is written into the workspace
//            with the borders holding x's zero point; threads split the (block group,
//            output row, run of tiles) items. A 1x1 stride-1 unpadded conv is a blocked
//            GEMM: its rows are one run of H*W pixels.
// Applies to int8 convs with u8 input, input and output in the set's blocks, one group,
// groups of whole blocks (in and out: RegNet's 16-channel groups on 16 or 8 lanes; a block
// group then reduces over its conv group's input blocks only) or of 4 or more channels
// dividing a block (regnet_y's 8-channel groups on 16 lanes: one block group per block,
// zero weights across groups), and stride along W of 1 or 2
// (any stride for a 1x1 unpadded conv at stride 1). On a path
// without the kernels (scalar, AVX-512 without VNNI) or blocks other than the set's, the same
// problems run the NCHW int8 conv between reorders.
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

bool flat_1x1(const ConvProblem& p) { return blocked_flat_1x1(p); }

bool blocked_direct_supports(const ConvProblem& p) {
  return p.is_int8() && is_blocked(p.x_layout) && p.y_layout == p.x_layout &&
         p.quant.x.type == DType::kU8 && blocked_groups_supported(p, layout_block(p.y_layout)) &&
         (flat_1x1(p) || p.stride_w <= 2);
}

// The kernel set runs the problem's blocks.
bool set_runs(const ukernel::QS8NchwcUkernels* set, const ConvProblem& p) {
  return set && set->lanes == layout_block(p.y_layout);
}

// The kernels' input as int16 (the AVX2 pair kernels'): the blocked image's pixels (lanes
// bytes each) into [blocks][hp][wp][lanes] s16, x's zero point in the borders of a padded
// image; an unpadded one is one contiguous run, split evenly over the pool.
void widen_image(const uint8_t* x, int16_t* dst, int64_t blocks, int64_t lanes, int64_t h,
                 int64_t w, int64_t hp, int64_t wp, int64_t pad_t, int64_t pad_l, bool padded,
                 ThreadPool& pool, int16_t fill) {
  if (!padded) {
    const int64_t n = blocks * hp * wp * lanes, parts = 4 * static_cast<int64_t>(pool.threads());
    const int64_t step = std::max<int64_t>(64, (n / parts + 63) / 64 * 64);
    pool.parallel_for(static_cast<size_t>((n + step - 1) / step), [&](size_t part) {
      const int64_t b = static_cast<int64_t>(part) * step, e = std::min(n, b + step);
      const uint8_t* __restrict src = x;
      int16_t* __restrict d = dst;
      for (int64_t i = b; i < e; ++i) d[i] = src[i];
    });
    return;
  }
  pad_blocked_image(x, dst, blocks, lanes, h, w, hp, wp, pad_t, pad_l, pool, fill);
}

class PreparedDirectNchwcQs8 final : public qconv_detail::PreparedInt8Conv {
 public:
  PreparedDirectNchwcQs8(const ConvProblem& p, const ConvWeights& cw, const Knobs& kn,
                         const ukernel::QS8NchwcUkernels& set)
      : p_(p), lanes_(set.lanes), kr_(set.kr) {
    const int8_t* w = cw.int8_data();
    cbx_ = ceil_div(p.c, lanes_);
    ocb_ = ceil_div(p.k, lanes_);
    // A conv group's blocks: all of them with one group, else a block group never spans two
    // conv groups and reduces over its group's input blocks; groups narrower than a block
    // run as one group per block (its lanes of other conv groups meet zero weights).
    const int64_t cg = blocked_conv_groups(p, lanes_), ocb_g = ocb_ / cg;
    cbg_ = cbx_ / cg;
    nv_ =
        std::clamp<int64_t>(kn.at("nv"), 1, std::min<int64_t>(ocb_g, ukernel::kQS8NchwcMaxBlocks));
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
    for (int nv = 1; nv <= ukernel::kQS8NchwcMaxBlocks; ++nv)
      for (int px = 1; px <= pw_; ++px) kernels_[nv - 1][px - 1] = set.select(nv, px, stride);
    for (const BlockGroup& bg : bgroups_) {
      const int64_t last = cols_ - (tiles_ - 1) * pw_;
      DLAS_CHECK(kernel(bg.blocks, pw_) && kernel(bg.blocks, last), ErrorKind::kInternal,
                 "direct (int8 blocks): no kernel for ", bg.blocks, " blocks x ", pw_, " pixels");
    }
    // Weights: per block group [cbg][kh][kw][lanes_ / kr groups][blocks][lanes_][4 bytes]
    // over its conv group's input blocks; a group's 4 bytes are kr = 4 s8 weights or kr = 2
    // sign-extended s16 ones.
    const int64_t taps = p.kh * p.kw, ng = lanes_ / kr_, cpg = p.c / p.groups, kpg = p.k / p.groups;
    int64_t offset = 0;
    for (BlockGroup& bg : bgroups_)
      bg.w_offset = offset, offset += cbg_ * taps * ng * bg.blocks * lanes_ * 4;
    w_.assign(static_cast<size_t>(offset), 0);
    for (const BlockGroup& bg : bgroups_) {
      int8_t* wg = w_.data() + bg.w_offset;
      for (int64_t cb = 0; cb < cbg_; ++cb)
        for (int64_t t = 0; t < taps; ++t)
          for (int64_t q = 0; q < ng; ++q)
            for (int64_t v = 0; v < bg.blocks; ++v)
              for (int64_t l = 0; l < lanes_; ++l)
                for (int64_t e = 0; e < kr_; ++e) {
                  const int64_t oc = (bg.first_block + v) * lanes_ + l,
                                ic = (bg.x_block + cb) * lanes_ + kr_ * q + e,
                                local = ic - oc / kpg * cpg;  // within oc's conv group
                  if (oc >= p.k || ic >= p.c || local < 0 || local >= cpg) continue;
                  const int8_t wv = w[(oc * cpg + local) * taps + t];
                  int8_t* dst =
                      wg + ((((cb * taps + t) * ng + q) * bg.blocks + v) * lanes_ + l) * 4;
                  if (kr_ == 4) {
                    dst[e] = wv;
                  } else {
                    const int16_t s = wv;
                    std::memcpy(dst + 2 * e, &s, 2);
                  }
                }
    }
    const qconv_detail::ChannelTerms terms =
        qconv_detail::channel_terms(p, w, cw.w_scale, cw.bias_s32);
    init_.assign(static_cast<size_t>(ocb_ * lanes_), 0);
    mult_.assign(static_cast<size_t>(ocb_ * lanes_), 0.f);
    std::copy(terms.init.begin(), terms.init.end(), init_.begin());
    std::copy(terms.mult.begin(), terms.mult.end(), mult_.begin());
    base_ = qconv_detail::base_params(p);
    spatial_ = split_spatially(oh_ * ow_, lanes_ * (cbx_ * p.h * p.w + ocb_ * oh_ * ow_),
                               static_cast<int64_t>(w_.size()));
  }

  size_t workspace_bytes(int) const override {
    return staged() ? static_cast<size_t>(cbx_ * hp_ * wp_ * lanes_ * in_bytes()) : 0;
  }
  size_t packed_bytes() const override {
    return w_.size() + init_.size() * sizeof(int32_t) + mult_.size() * sizeof(float);
  }

  void run(const void* in_v, void* out_v, const void* res_v, void* workspace,
           ThreadPool& pool) const override {
    const uint8_t* in = static_cast<const uint8_t*>(in_v);
    uint8_t* out = static_cast<uint8_t*>(out_v);
    const uint8_t* residual = static_cast<const uint8_t*>(res_v);
    const int64_t in_img = cbx_ * lanes_ * p_.h * p_.w;
    const int64_t out_img = ocb_ * lanes_ * oh_ * ow_;
    const int64_t xb = in_bytes() * lanes_;  // bytes of a pixel's block in the kernel's input
    ukernel::QS8NchwcArgs base;
    base.cb = static_cast<size_t>(cbg_);
    base.kh = static_cast<size_t>(p_.kh), base.kw = static_cast<size_t>(p_.kw);
    base.x_cbs = static_cast<size_t>(hp_ * wp_ * xb);
    base.x_khs = static_cast<size_t>(p_.dil_h * wp_ * xb);
    base.x_kws = static_cast<size_t>(p_.dil_w * xb);
    base.y_cbs = static_cast<size_t>(oh_ * ow_ * lanes_);
    const int64_t sh = flat_ ? 1 : p_.stride_h, sw = flat_ ? 1 : p_.stride_w;
    const uint8_t xzp = static_cast<uint8_t>(p_.quant.x.zero_point);
    for (int64_t img = 0; img < p_.n; ++img) {
      const uint8_t* x = in + img * in_img;
      if (kr_ == 2) {
        widen_image(x, static_cast<int16_t*>(workspace), cbx_, lanes_, p_.h, p_.w, hp_, wp_,
                    p_.pad_t, p_.pad_l, padded_, pool, xzp);
        x = static_cast<const uint8_t*>(workspace);
      } else if (padded_) {
        pad_blocked_image(x, static_cast<uint8_t*>(workspace), cbx_, lanes_, p_.h, p_.w, hp_, wp_,
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
            a.init = init_.data() + bg.first_block * lanes_;
            a.mult = mult_.data() + bg.first_block * lanes_;
            const int64_t y0 = bg.first_block * oh_ * ow_ * lanes_ + row * cols_ * lanes_;
            for_each_tile_call(t0, t1, cols_, pw_, t1 - t0, [&](int64_t c0, int64_t n, int64_t px) {
              const int64_t y_off = y0 + c0 * lanes_;
              a.r = r ? r + y_off : nullptr;
              a.tiles = static_cast<size_t>(n);
              const uint8_t* xt = x + (bg.x_block * hp_ * wp_ + (row * sh) * wp_ + c0 * sw) * xb;
              kernel(bg.blocks, px)(a, base_, xt, w_.data() + bg.w_offset, y + y_off);
            });
          });
    }
  }

 private:
  ukernel::QS8NchwcFn kernel(int64_t nv, int64_t px) const { return kernels_[nv - 1][px - 1]; }
  // Bytes per input channel the kernels read: 1 (u8), or 2 (the widened s16 copy).
  int64_t in_bytes() const { return kr_ == 2 ? 2 : 1; }
  // Whether the kernels read a copy of the input in the workspace.
  bool staged() const { return padded_ || kr_ == 2; }

  struct BlockGroup {
    int64_t first_block, blocks, x_block, w_offset;  // x_block: its conv group's first input block
  };
  ConvProblem p_;
  int64_t lanes_, kr_;  // channels per block, input channels per 4-byte group (qs8_nchwc.h)
  int64_t cbx_ = 0, cbg_ = 0, ocb_ = 0, nv_ = 1, pw_ = 1, oh_ = 0, ow_ = 0;
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
  const int64_t ocb = ceil_div(p.k, set.lanes) / blocked_conv_groups(p, set.lanes);  // per group
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
    if (!set_runs(ukernel::qs8_nchwc_for(isa), p)) return s;
    std::vector<int64_t> nvs, pws;
    for (int64_t v = 1; v <= ukernel::kQS8NchwcMaxBlocks; ++v) nvs.push_back(v);
    for (int64_t v : kBlockedTilePixels) pws.push_back(v);
    s.knobs.push_back(
        {"nv", nvs, "output-channel blocks (one vector of channels each) per register tile"});
    s.knobs.push_back(
        {"pw", pws, "output pixels along a row per register tile (capped by the registers)"});
    return s;
  }
  Knobs default_knobs(const ConvProblem& p, Isa isa) const override {
    if (!p.is_blocked()) return nchw().default_knobs(p, isa);
    const ukernel::QS8NchwcUkernels* set = ukernel::qs8_nchwc_for(isa);
    return set_runs(set, p) ? default_tile(p, *set) : Knobs{};
  }
  std::unique_ptr<PreparedConv> prepare(const ConvProblem& p, const ConvWeights& w,
                                        const Knobs& knobs, Isa isa) const override {
    if (!p.is_blocked()) return nchw().prepare(p, w, knobs, isa);
    p.validate();
    DLAS_CHECK(blocked_direct_supports(p), ErrorKind::kUnsupported,
               "int8 direct on blocks does not support ", p.key());
    knob_space(p, isa).validate(knobs, "int8 direct conv " + p.key());
    const ukernel::QS8NchwcUkernels* set = ukernel::qs8_nchwc_for(isa);
    if (!set_runs(set, p)) return qconv_detail::prepare_int8_via_nchw(p, w, isa);
    Knobs k = default_tile(p, *set);
    for (const auto& [name, v] : knobs) k[name] = v;
    return std::make_unique<PreparedDirectNchwcQs8>(p, w, k, *set);
  }

 private:
  static const ConvAlgorithm& nchw() { return qconv_detail::vector_direct_qconv_algorithm(); }
};

}  // namespace

bool int8_blocks_native(Isa isa) { return ukernel::qs8_nchwc_for(isa) != nullptr; }

Layout int8_blocked_layout(Isa isa) {
  const ukernel::QS8NchwcUkernels* set = ukernel::qs8_nchwc_for(isa);
  return !set ? Layout::kNchw : set->lanes == 8 ? Layout::kNchw8c : Layout::kNchw16c;
}

namespace qconv_detail {
const ConvAlgorithm& vector_or_nchwc_direct_qconv_algorithm() {
  static const DirectQConvByLayout algo;
  return algo;
}
}  // namespace qconv_detail

}  // namespace dlas

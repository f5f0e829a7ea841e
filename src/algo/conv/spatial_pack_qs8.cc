// int8 `spatial-pack` and vector `direct` convolutions on the qs8-spack microkernels
// (microkernels/qs8-spack/qs8_spack.h): output tiles of VH x VW pixels x VC output channels held in
// registers, lanes over output channels, one 4-byte group (KR input channels of one pixel)
// broadcast per dot -- the f32 spatial-pack's register blocking on the int8 primitives.
//
// Both pack the activations into a channel-group-interleaved layout [C/g/KR][rows][cols][4
// bytes] (u8 quads, or s16 pairs on the pmaddwd paths; s8 stored as x ^ 0x80, padding = the
// stored zero point, so init = bias - zp * sum(w) folds the zero point as in gemm):
//   spatial-pack  per output tile, its receptive field with the halo (rows and columns
//                 shared by neighbouring taps), packed just before use into a per-thread
//                 buffer that stays in L1 while every VC block of weights sweeps it (TVM's
//                 conv2d_spatial_pack);
//   direct        the whole padded image once (threads split the channel groups), then
//                 every (VC block, tile) reads it in place with image strides: no halo
//                 copies, one pack per image instead of one per tile.
// Weights are packed once into [G][K/g/VC][kq][KH][KW][VC][4 bytes]. The kernel writes the
// requantized tile as [VH*VW][VC] bytes; the residual tile is gathered into the same layout
// before and the output scattered into NCHW after (edge pixels and channels are computed
// from padding and not stored; whole tiles move by unrolled code for the tile's shape).
//
// Knobs: vc (VC = vc * lanes), vh, vw (tile), and for spatial-pack `parallel`
// (0: threads split the tiles; 1: threads split the VC blocks, each packing every tile).
#include <cstring>
#include <memory>
#include <vector>

#include "algo/conv/gemm_common.h"
#include "algo/conv/qs8_common.h"
#include "algo/microkernels/qs8-pack/qs8_pack.h"
#include "algo/microkernels/qs8-spack/qs8_spack.h"
#include "dlas/core/error.h"
#include "dlas/hw/thread_pool.h"

namespace dlas {
namespace {

using conv_detail::chunk_range;
using conv_detail::div_up;
using conv_detail::round_up;

// A whole tile's moves between the kernel's [VH*VW][VC] bytes and NCHW, with the tile's
// shape as constants: fully unrolled byte moves. The run-time loops of the edge tiles cost
// small-channel layers (resnet18-cifar's 64-channel 32x32 ones: 32-38% of the VNNI peak on
// a Zen 4) about as much as the kernel itself.
// The last VC block of a layer whose channel count is not a multiple of VC (24 channels in
// blocks of 16, 48 in blocks of 32) moves its `nv` channels with the same unrolled pixel
// loops (`part`), not the run-time loops of the edge tiles.
struct TileMoves {
  void (*scatter)(const uint8_t* tile, uint8_t* y, int64_t ohw, int64_t ow);
  void (*gather)(const uint8_t* r, uint8_t* tile, int64_t ohw, int64_t ow);
  void (*scatter_part)(const uint8_t* tile, uint8_t* y, int64_t ohw, int64_t ow, int nv);
  void (*gather_part)(const uint8_t* r, uint8_t* tile, int64_t ohw, int64_t ow, int nv);
};

// kToNchw: tile [VH*VW][VC] -> NCHW (the output); else NCHW -> tile (the residual). Channels
// [0, nv).
template <int VC, int VH, int VW, bool kToNchw>
inline void move_channels(const uint8_t* from, uint8_t* to, int64_t ohw, int64_t ow, int nv) {
#pragma GCC unroll 64
  for (int v = 0; v < nv; ++v)
#pragma GCC unroll 4
    for (int a = 0; a < VH; ++a)
#pragma GCC unroll 8
      for (int b = 0; b < VW; ++b) {
        const int64_t nchw = v * ohw + a * ow + b, tile = (a * VW + b) * VC + v;
        to[kToNchw ? nchw : tile] = from[kToNchw ? tile : nchw];
      }
}

template <int VC, int VH, int VW, bool kToNchw>
void move_tile(const uint8_t* from, uint8_t* to, int64_t ohw, int64_t ow) {
  move_channels<VC, VH, VW, kToNchw>(from, to, ohw, ow, VC);
}

template <int VC, int VH, int VW, bool kToNchw>
void move_part(const uint8_t* from, uint8_t* to, int64_t ohw, int64_t ow, int nv) {
  move_channels<VC, VH, VW, kToNchw>(from, to, ohw, ow, nv);
}

template <int VC, int VH, int VW>
TileMoves tile_moves_for() {
  return {&move_tile<VC, VH, VW, true>, &move_tile<VC, VH, VW, false>, &move_part<VC, VH, VW, true>,
          &move_part<VC, VH, VW, false>};
}

template <int VC, int VH>
TileMoves tile_moves_vw(int64_t vw) {
  switch (vw) {
    case 4:
      return tile_moves_for<VC, VH, 4>();
    case 7:
      return tile_moves_for<VC, VH, 7>();
    case 8:
      return tile_moves_for<VC, VH, 8>();
    default:
      return {};
  }
}

template <int VC>
TileMoves tile_moves_vh(int64_t vh, int64_t vw) {
  switch (vh) {
    case 1:
      return tile_moves_vw<VC, 1>(vw);
    case 2:
      return tile_moves_vw<VC, 2>(vw);
    case 4:
      return tile_moves_vw<VC, 4>(vw);
    default:
      return {nullptr, nullptr};
  }
}

// The knobs' tiles (qs8_spack.h: VC = 1 or 2 vectors of 4, 8 or 16 lanes); {} elsewhere (the
// run-time loops then move every tile).
TileMoves tile_moves(int64_t vc, int64_t vh, int64_t vw) {
  switch (vc) {
    case 4:
      return tile_moves_vh<4>(vh, vw);
    case 8:
      return tile_moves_vh<8>(vh, vw);
    case 16:
      return tile_moves_vh<16>(vh, vw);
    case 32:
      return tile_moves_vh<32>(vh, vw);
    default:
      return {};
  }
}
using qconv_detail::BlockedMode;
using ukernel::QS8SpackUkernels;

class PreparedBlockedQConv final : public qconv_detail::PreparedInt8Conv {
 public:
  PreparedBlockedQConv(const ConvProblem& p, const int8_t* w, const float* w_scale,
                       const int32_t* bias, const Knobs& kn, const QS8SpackUkernels& set,
                       BlockedMode mode)
      : p_(p), mode_(mode), pack_(ukernel::qs8_pack_for(set.isa)) {
    const ConvProblem& c = p;
    kr_ = set.kr;
    vc_ = kn.at("vc") * set.lanes;
    vh_ = kn.at("vh"), vw_ = kn.at("vw");
    moves_ = tile_moves(vc_, vh_, vw_);
    parallel_ = mode == BlockedMode::kTiles ? kn.at("parallel") : 0;
    kernel_ =
        set.select(static_cast<int>(kn.at("vc")), static_cast<int>(vh_), static_cast<int>(vw_));
    DLAS_CHECK(kernel_ != nullptr, ErrorKind::kInternal,
               "int8 spatial-pack: no kernel for vc=", vc_, " vh=", vh_, " vw=", vw_);
    kg_ = c.k_per_group(), cg_ = c.c_per_group();
    oh_ = c.oh(), ow_ = c.ow();
    kq_ = div_up(cg_, kr_);
    blocks_ = div_up(kg_, vc_);
    th_ = div_up(oh_, vh_), tw_ = div_up(ow_, vw_), tiles_ = th_ * tw_;
    if (mode == BlockedMode::kTiles) {
      rows_ = (vh_ - 1) * c.stride_h + (c.kh - 1) * c.dil_h + 1;
      cols_ = (vw_ - 1) * c.stride_w + (c.kw - 1) * c.dil_w + 1;
    } else {
      rows_ = (th_ * vh_ - 1) * c.stride_h + (c.kh - 1) * c.dil_h + 1;
      cols_ = (tw_ * vw_ - 1) * c.stride_w + (c.kw - 1) * c.dil_w + 1;
    }
    xzp_ = static_cast<uint8_t>(qconv_detail::stored_zero_point(p.quant.x));
    flip_ = p.quant.x.type == DType::kS8 ? 0x80 : 0;
    zp_word_ = kr_ == 4 ? 0x01010101u * xzp_ : (static_cast<uint32_t>(xzp_) * 0x10001u);

    // Weights [g][block][kq][kh][kw][vc][4 bytes]; init / mult [g][block][vc].
    const int64_t taps = c.kh * c.kw;
    block_bytes_ = kq_ * taps * vc_ * 4;
    wpack_.assign(static_cast<size_t>(c.groups * blocks_ * block_bytes_), 0);
    init_.assign(static_cast<size_t>(c.groups * blocks_ * vc_), 0);
    mult_.assign(init_.size(), 0.f);
    const qconv_detail::ChannelTerms terms = qconv_detail::channel_terms(p, w, w_scale, bias);
    for (int64_t g = 0; g < c.groups; ++g)
      for (int64_t k = 0; k < kg_; ++k) {
        const int64_t blk = k / vc_, lane = k % vc_;
        uint8_t* dst = wpack_.data() + (g * blocks_ + blk) * block_bytes_;
        for (int64_t ci = 0; ci < cg_; ++ci)
          for (int64_t t = 0; t < taps; ++t) {
            const int8_t v = w[((g * kg_ + k) * cg_ + ci) * taps + t];
            const int64_t q = ci / kr_, e = ci % kr_;
            uint8_t* o = dst + ((q * taps + t) * vc_ + lane) * 4;
            if (kr_ == 4) {
              o[e] = static_cast<uint8_t>(v);
            } else {
              const int16_t s = v;
              std::memcpy(o + 2 * e, &s, 2);
            }
          }
        init_[(g * blocks_ + blk) * vc_ + lane] = terms.init[g * kg_ + k];
        mult_[(g * blocks_ + blk) * vc_ + lane] = terms.mult[g * kg_ + k];
      }
    base_ = qconv_detail::base_params(p);
  }

  size_t workspace_bytes(int threads) const override {
    const int64_t shared = mode_ == BlockedMode::kImage ? round_up(xbytes(), 64) : 0;
    const int64_t per_thread = (mode_ == BlockedMode::kTiles ? round_up(xbytes(), 64) : 0) +
                               2 * round_up(vh_ * vw_ * vc_, 64);
    return static_cast<size_t>(shared + threads * per_thread);
  }
  size_t packed_bytes() const override {
    return wpack_.size() + init_.size() * sizeof(int32_t) + mult_.size() * sizeof(float);
  }

  void run(const void* x, void* y, const void* residual, void* workspace,
           ThreadPool& pool) const override {
    uint8_t* ws = static_cast<uint8_t*>(workspace);
    const ConvProblem& c = p_;
    const int64_t threads = pool.threads();
    const int64_t tile_out = round_up(vh_ * vw_ * vc_, 64);
    for (int64_t n = 0; n < c.n; ++n)
      for (int64_t g = 0; g < c.groups; ++g) {
        if (mode_ == BlockedMode::kImage) {
          uint8_t* img = ws;
          uint8_t* scratch = ws + round_up(xbytes(), 64);
          // Each thread packs its share of the channel groups, then computes its share of
          // the tiles once all are packed: one loop with a barrier, not two loops.
          pool.parallel_phases([&](size_t t, auto sync) {
            int64_t b, e;
            chunk_range(kq_, threads, static_cast<int64_t>(t), &b, &e);
            pack_window(x, n, g, -c.pad_t, -c.pad_l, b, e, img);
            sync();
            chunk_range(blocks_ * tiles_, threads, static_cast<int64_t>(t), &b, &e);
            uint8_t* out = scratch + static_cast<int64_t>(t) * 2 * tile_out;
            for (int64_t it = b; it < e; ++it) {
              const int64_t blk = it / tiles_, tile = it % tiles_;
              const int64_t ty = tile / tw_, tx = tile % tw_;
              const uint8_t* base =
                  img + ((ty * vh_ * c.stride_h) * cols_ + tx * vw_ * c.stride_w) * 4;
              compute(base, y, residual, n, g, blk, ty, tx, out, out + tile_out);
            }
          });
          continue;
        }
        const int64_t per_thread = round_up(xbytes(), 64) + 2 * tile_out;
        pool.parallel_for(static_cast<size_t>(threads), [&](size_t t) {
          uint8_t* buf = ws + static_cast<int64_t>(t) * per_thread;
          uint8_t* out = buf + round_up(xbytes(), 64);
          int64_t t0 = 0, t1 = tiles_, b0 = 0, b1 = blocks_;
          if (parallel_ == 0)
            chunk_range(tiles_, threads, static_cast<int64_t>(t), &t0, &t1);
          else
            chunk_range(blocks_, threads, static_cast<int64_t>(t), &b0, &b1);
          if (b0 >= b1) return;
          for (int64_t tile = t0; tile < t1; ++tile) {
            const int64_t ty = tile / tw_, tx = tile % tw_;
            pack_window(x, n, g, ty * vh_ * c.stride_h - c.pad_t, tx * vw_ * c.stride_w - c.pad_l,
                        0, kq_, buf);
            for (int64_t blk = b0; blk < b1; ++blk)
              compute(buf, y, residual, n, g, blk, ty, tx, out, out + tile_out);
          }
        });
      }
  }

 private:
  // The packed activations: one tile's window (spatial-pack) or the padded image (direct).
  int64_t xbytes() const { return kq_ * rows_ * cols_ * 4; }

  // Groups [q0, q1) of the window of rows_ x cols_ input pixels whose top-left is (iy0, ix0)
  // (may lie in the padding) of image n, group g -> dst[q][row][col][4 bytes].
  void pack_window(const void* xv, int64_t n, int64_t g, int64_t iy0, int64_t ix0, int64_t q0,
                   int64_t q1, uint8_t* dst) const {
    const ConvProblem& c = p_;
    const uint8_t* x = static_cast<const uint8_t*>(xv) + (n * c.c + g * cg_) * c.h * c.w;
    const int64_t rowb = cols_ * 4;
    // Columns [xa, xb) of the window are inside the image (none when xb <= xa).
    const int64_t xa = ix0 < 0 ? 0 : ix0;
    const int64_t xb = ix0 + cols_ < c.w ? ix0 + cols_ : c.w;
    for (int64_t q = q0; q < q1; ++q) {
      const uint8_t* planes[4];
      for (int64_t e = 0; e < 4; ++e) {
        int64_t ci = q * kr_ + (e < kr_ ? e : 0);
        if (ci >= cg_) ci = cg_ - 1;  // a channel past C/g: any bytes (its weights are 0)
        planes[e] = x + ci * c.h * c.w;
      }
      for (int64_t r = 0; r < rows_; ++r) {
        uint8_t* row = dst + (q * rows_ + r) * rowb;
        const int64_t iy = iy0 + r;
        if (iy < 0 || iy >= c.h || xa >= xb) {
          fill_zp(row, cols_);
          continue;
        }
        fill_zp(row, xa - ix0);
        const uint8_t* src[4];
        for (int e = 0; e < 4; ++e) src[e] = planes[e] + iy * c.w + xa;
        (kr_ == 4 ? pack_.quads : pack_.pairs)(src, static_cast<size_t>(xb - xa), flip_,
                                               row + (xa - ix0) * 4);
        fill_zp(row + (xb - ix0) * 4, ix0 + cols_ - xb);
      }
    }
  }

  void fill_zp(uint8_t* dst, int64_t pixels) const {
    for (int64_t i = 0; i < pixels; ++i) std::memcpy(dst + i * 4, &zp_word_, 4);
  }

  // One VC block x one tile: gather the residual tile, run the kernel, scatter the valid
  // pixels and channels into NCHW.
  void compute(const uint8_t* xbase, void* yv, const void* residual, int64_t n, int64_t g,
               int64_t blk, int64_t ty, int64_t tx, uint8_t* out, uint8_t* rtile) const {
    const ConvProblem& c = p_;
    const int64_t k0 = g * kg_ + blk * vc_;
    const int64_t nk = kg_ - blk * vc_ < vc_ ? kg_ - blk * vc_ : vc_;
    const int64_t oy0 = ty * vh_, ox0 = tx * vw_;
    const int64_t nh = oh_ - oy0 < vh_ ? oh_ - oy0 : vh_;
    const int64_t nw = ow_ - ox0 < vw_ ? ow_ - ox0 : vw_;
    const int64_t ohw = oh_ * ow_;
    const int64_t ybase = (n * c.k + k0) * ohw + oy0 * ow_ + ox0;
    // A whole tile of all VC channels, or of the last block's nk, moves by unrolled code.
    const bool pixels = nh == vh_ && nw == vw_ && moves_.scatter;
    const bool whole = pixels && nk == vc_;
    const int part = static_cast<int>(nk);
    if (residual && whole) {
      moves_.gather(static_cast<const uint8_t*>(residual) + ybase, rtile, ohw, ow_);
    } else if (residual && pixels) {
      moves_.gather_part(static_cast<const uint8_t*>(residual) + ybase, rtile, ohw, ow_, part);
    } else if (residual) {
      const uint8_t* r = static_cast<const uint8_t*>(residual) + ybase;
      for (int64_t v = 0; v < nk; ++v)
        for (int64_t a = 0; a < nh; ++a)
          for (int64_t b = 0; b < nw; ++b)
            rtile[(a * vw_ + b) * vc_ + v] = r[v * ohw + a * ow_ + b];
    }
    const int64_t rowb = cols_ * 4;
    ukernel::QS8SpackTile t;
    t.kq = static_cast<size_t>(kq_);
    t.kh = static_cast<size_t>(c.kh), t.kw = static_cast<size_t>(c.kw);
    t.x = xbase;
    t.cs = static_cast<size_t>(rows_ * rowb);
    t.rs = static_cast<size_t>(c.stride_h * rowb);
    t.khs = static_cast<size_t>(c.dil_h * rowb);
    t.kws = static_cast<size_t>(c.dil_w * 4);
    t.ps = static_cast<size_t>(c.stride_w * 4);
    t.w = wpack_.data() + (g * blocks_ + blk) * block_bytes_;
    t.init = init_.data() + (g * blocks_ + blk) * vc_;
    t.mult = mult_.data() + (g * blocks_ + blk) * vc_;
    t.residual = residual ? rtile : nullptr;
    t.out = out;
    kernel_(t, base_);
    uint8_t* y = static_cast<uint8_t*>(yv) + ybase;
    if (whole) {
      moves_.scatter(out, y, ohw, ow_);
      return;
    }
    if (pixels) {
      moves_.scatter_part(out, y, ohw, ow_, part);
      return;
    }
    for (int64_t v = 0; v < nk; ++v)
      for (int64_t a = 0; a < nh; ++a)
        for (int64_t b = 0; b < nw; ++b) y[v * ohw + a * ow_ + b] = out[(a * vw_ + b) * vc_ + v];
  }

  ConvProblem p_;
  BlockedMode mode_;
  const ukernel::QS8PackUkernels& pack_;
  ukernel::QS8SpackFn kernel_;
  TileMoves moves_{};
  int64_t kr_, vc_, vh_, vw_, parallel_, kg_, cg_, oh_, ow_, kq_, blocks_, th_, tw_, tiles_;
  int64_t rows_, cols_, block_bytes_;
  uint8_t xzp_, flip_;
  uint32_t zp_word_;
  std::vector<uint8_t> wpack_;
  std::vector<int32_t> init_;
  std::vector<float> mult_;
  ukernel::QS8GemmParams base_;
};

KnobSpace blocked_knob_space(BlockedMode mode) {
  KnobSpace s;
  KnobSpec vc{"vc", {}, "output channels per tile, in vectors of the path's lanes"};
  for (int v : ukernel::kQS8SpackVectors) vc.values.push_back(v);
  KnobSpec vh{"vh", {}, "tile rows"};
  for (int v : ukernel::kQS8SpackVh) vh.values.push_back(v);
  KnobSpec vw{"vw", {}, "tile columns"};
  for (int v : ukernel::kQS8SpackVw) vw.values.push_back(v);
  s.knobs = {vc, vh, vw};
  if (mode == BlockedMode::kTiles)
    s.knobs.push_back({"parallel", {0, 1}, "0: threads split the tiles; 1: the VC blocks"});
  return s;
}

// Measured on AVX2 (Zen 3, 2 threads; README "int8 kernels"): 2 vectors x 2 x 4 pixels
// was the fastest tile of the knob space on every 3x3 layer of resnet18-cifar (16
// accumulators: 2 weight vectors amortised over 8 broadcasts), ahead of the 14-register
// tiles that do not spill; AVX-512 takes the same shape (16 of 32 zmm). Fewer output
// channels than 2 vectors: 1 vector. Threads split the tiles unless there are fewer than 4.
Knobs blocked_default_knobs(const ConvProblem& p, Isa isa, BlockedMode mode) {
  const ukernel::QS8SpackUkernels& set = ukernel::qs8_spack_for(isa);
  const int64_t oh = p.oh(), ow = p.ow();
  // Two vectors unless that computes more padding lanes than one (48 channels: 64 lanes
  // against 48).
  const int64_t kg = p.k_per_group();
  const int64_t vc =
      kg >= 2 * set.lanes && round_up(kg, 2 * set.lanes) <= round_up(kg, set.lanes) ? 2 : 1;
  const int64_t vh = oh >= 2 ? 2 : 1, vw = 4;
  Knobs k = {{"vc", vc}, {"vh", vh}, {"vw", vw}};
  if (mode == BlockedMode::kTiles)
    k["parallel"] = conv_detail::div_up(oh, vh) * conv_detail::div_up(ow, vw) < 4 ? 1 : 0;
  return k;
}

class BlockedQConvAlgorithm final : public ConvAlgorithm {
 public:
  explicit BlockedQConvAlgorithm(BlockedMode mode) : mode_(mode) {}
  std::string_view name() const override {
    return mode_ == BlockedMode::kTiles ? "spatial-pack" : "direct";
  }
  // NCHW activations at the interface (the blocked int8 direct is direct_nchwc_qs8.cc).
  bool supports(const ConvProblem& p) const override { return !p.is_blocked(); }
  KnobSpace knob_space(const ConvProblem&, Isa) const override { return blocked_knob_space(mode_); }
  Knobs default_knobs(const ConvProblem& p, Isa isa) const override {
    return blocked_default_knobs(p, isa, mode_);
  }
  std::unique_ptr<PreparedConv> prepare(const ConvProblem& p, const ConvWeights& w,
                                        const Knobs& knobs, Isa isa) const override {
    p.validate();
    knob_space(p, isa).validate(knobs, "int8 " + std::string(name()) + " conv " + p.key());
    return qconv_detail::prepare_blocked_qconv(p, w, knobs, ukernel::qs8_spack_for(isa), mode_);
  }

 private:
  BlockedMode mode_;
};

}  // namespace

namespace qconv_detail {

std::unique_ptr<PreparedConv> prepare_blocked_qconv(const ConvProblem& p, const ConvWeights& w,
                                                    const Knobs& knobs,
                                                    const ukernel::QS8SpackUkernels& set,
                                                    BlockedMode mode) {
  p.validate();
  return std::make_unique<PreparedBlockedQConv>(p, w.int8_data(), w.w_scale, w.bias_s32, knobs, set,
                                                mode);
}

}  // namespace qconv_detail

const ConvAlgorithm& spatial_pack_qconv_algorithm() {
  static const BlockedQConvAlgorithm algo(BlockedMode::kTiles);
  return algo;
}

namespace qconv_detail {
const ConvAlgorithm& vector_direct_qconv_algorithm() {
  static const BlockedQConvAlgorithm algo(BlockedMode::kImage);
  return algo;
}
}  // namespace qconv_detail

}  // namespace dlas

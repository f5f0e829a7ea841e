// int8 `winograd` on 8-bit channel blocks: F(2x2, 3x3) for 3x3 stride-1 dilation-1
// ungrouped convs with u8 input in nchw8c (the AVX2 path's int8 layout), exact in integers
// (qs8_wino.h: integer transforms, int16 points, vpmaddwd sums in int32) and so bit-identical
// to the oracle. It does 16 multiplications per 2x2 outputs and channel pair where `direct`
// does 36, for the price of the transforms and of weights 16/9 x as many and twice as wide.
//
//   prepare: U = (2G) g (2G)^T per (k, c) in integers, packed per point xi and group of nv
//            output blocks as the AVX2 qs8-nchwc tiles' weights ([C blocks][4 pairs][nv]
//            [8 lanes][2 x s16]); per output channel init = bias - x_zp * sum(w) and the
//            requantization multiplier, as `direct`.
//   run, per image: the image is copied into the workspace with x's zero point around it
//            (enough rows and columns for whole 2x2 tiles); then per block of `tile_block`
//            tiles:
//     1. input transform, split over input-channel blocks: V[xi][cb][tile][8 s16];
//     2. 16 GEMMs M[xi] = U[xi] V[xi] on the qs8-nchwc AVX2 pair tiles without their store
//        (nv output blocks x pw tiles in registers), split over (xi, block group, tile run):
//        M[xi][kb][tile][8 int32];
//     3. output transform, split over output-channel blocks: Y = A^T M A, >> 2, + init,
//        then the requantizing store with the residual.
// On a path without the kernels (the transforms need AVX2) the problem runs the NCHW int8
// conv between reorders. Knobs: tile_block, nv, pw (as the f32 blocked winograd).
#include <algorithm>
#include <cstring>
#include <memory>
#include <vector>

#include "algo/conv/conv_impl.h"
#include "algo/conv/qs8_common.h"
#include "algo/microkernels/qs8-wino/qs8_wino.h"
#include "dlas/algo/layout.h"
#include "dlas/core/aligned_vector.h"
#include "dlas/core/error.h"
#include "dlas/hw/thread_pool.h"

namespace dlas {
namespace {

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

constexpr int64_t kLanes = 8;
constexpr int64_t kPoints = 16;
// Target bytes of V + M per tile block (about half an L2 of the AVX2 CPUs).
constexpr int64_t kBlockBytes = 512 << 10;
constexpr int64_t kTileBlocks[] = {8, 16, 32, 64, 128, 256};
// 2G of F(2,3): integer rows.
constexpr int32_t kG2x2[4][3] = {{2, 0, 0}, {1, 1, 1}, {1, -1, 1}, {0, 0, 2}};

int64_t tiles_of(const ConvProblem& p) { return ceil_div(p.oh(), 2) * ceil_div(p.ow(), 2); }

bool wino_supports(const ConvProblem& p) {
  return p.is_int8() && p.x_layout == Layout::kNchw8c && p.y_layout == p.x_layout &&
         p.quant.x.type == DType::kU8 && p.groups == 1 && p.kh == 3 && p.kw == 3 &&
         p.stride_h == 1 && p.stride_w == 1 && p.dil_h == 1 && p.dil_w == 1 &&
         p.c <= ukernel::kQS8WinoMaxChannels;
}

size_t align64(size_t bytes) { return (bytes + 63) / 64 * 64; }

class PreparedWinogradQs8 final : public qconv_detail::PreparedInt8Conv {
 public:
  PreparedWinogradQs8(const ConvProblem& p, const ConvWeights& cw, const Knobs& kn,
                      const ukernel::QS8WinoUkernels& set)
      : p_(p), set_(&set) {
    th_ = ceil_div(p.oh(), 2), tw_ = ceil_div(p.ow(), 2);
    tiles_ = th_ * tw_;
    tb_ = std::min(kn.at("tile_block"), tiles_);
    cb_ = ceil_div(p.c, kLanes), kb_ = ceil_div(p.k, kLanes);
    hp_ = 2 * th_ + 2, wp_ = 2 * tw_ + 2;
    nv_ = std::clamp<int64_t>(kn.at("nv"), 1, std::min<int64_t>(kb_, ukernel::kQS8NchwcMaxBlocks));
    pw_ = std::clamp<int64_t>(
        std::min<int64_t>({kn.at("pw"), set.max_pixels(static_cast<int>(nv_)), tb_}), 1,
        ukernel::kQS8NchwcMaxPixels);
    for (int nv = 1; nv <= ukernel::kQS8NchwcMaxBlocks; ++nv)
      for (int px = 1; px <= pw_; ++px) gemms_[nv - 1][px - 1] = set.gemm(nv, px);
    for (int64_t j = 0; j < kb_; j += nv_) groups_.push_back({j, std::min(nv_, kb_ - j), 0});
    for (const Group& g : groups_)
      for (int64_t px = 1; px <= pw_; ++px)
        DLAS_CHECK(gemm(g.blocks, px), ErrorKind::kInternal, "winograd (int8): no kernel for ",
                   g.blocks, " blocks x ", px, " tiles");
    transform_weights(cw.int8_data());
    const qconv_detail::ChannelTerms terms =
        qconv_detail::channel_terms(p, cw.int8_data(), cw.w_scale, cw.bias_s32);
    init_.assign(static_cast<size_t>(kb_ * kLanes), 0);
    mult_.assign(static_cast<size_t>(kb_ * kLanes), 0.f);
    std::copy(terms.init.begin(), terms.init.end(), init_.begin());
    std::copy(terms.mult.begin(), terms.mult.end(), mult_.begin());
    base_ = qconv_detail::base_params(p);
    // By bands from kSpatialSplitPixels up although the weights (16/9 x 2 bytes per s8 one)
    // exceed twice the activations there: resnet18-cifar's 32x32 and 16x16 layers ran 0.86x
    // and 0.93x of the channel split, and the weights stay in L2 (`dlas profile
    // resnet18-cifar --compress int8 --isa avx2 --threads 2`, DLAS_SPLIT, Zen 4).
    spatial_ = split_spatially(p.oh() * p.ow());
  }

  size_t workspace_bytes(int threads) const override {
    return image_bytes() +
           static_cast<size_t>(spatial_ ? std::max(threads, 1) : 1) * region_bytes();
  }
  size_t packed_bytes() const override {
    return u_.size() * sizeof(int16_t) + init_.size() * sizeof(int32_t) +
           mult_.size() * sizeof(float);
  }

  void run(const void* in_v, void* out_v, const void* res_v, void* workspace,
           ThreadPool& pool) const override {
    const uint8_t* in = static_cast<const uint8_t*>(in_v);
    uint8_t* out = static_cast<uint8_t*>(out_v);
    const uint8_t* residual = static_cast<const uint8_t*>(res_v);
    uint8_t* xp = static_cast<uint8_t*>(workspace);
    uint8_t* regions = xp + image_bytes();
    int16_t* v = reinterpret_cast<int16_t*>(regions);
    int32_t* mm = reinterpret_cast<int32_t*>(regions + align64(v_bytes()));
    const int64_t in_img = cb_ * kLanes * p_.h * p_.w, out_img = kb_ * kLanes * p_.oh() * p_.ow();
    const uint8_t xzp = static_cast<uint8_t>(p_.quant.x.zero_point);
    const int64_t ng = static_cast<int64_t>(groups_.size());
    for (int64_t img = 0; img < p_.n; ++img) {
      pad_blocked_image(in + img * in_img, xp, cb_, kLanes, p_.h, p_.w, hp_, wp_, p_.pad_t,
                        p_.pad_l, pool, xzp);
      uint8_t* y = out + img * out_img;
      const uint8_t* r = residual ? residual + img * out_img : nullptr;
      if (spatial_) {
        run_bands(xp, regions, y, r, pool);
        continue;
      }
      for (int64_t t0 = 0; t0 < tiles_; t0 += tb_) {
        const int64_t nt = std::min(tb_, tiles_ - t0);
        pool.parallel_for(static_cast<size_t>(cb_), [&](size_t cb) {
          transform_input(xp, static_cast<int64_t>(cb), t0, nt, v);
        });
        // GEMM items: (point, block group, run of tiles), about kItemsPerThread per thread.
        const int64_t runs_per =
            std::max<int64_t>(1, std::min(ceil_div(nt, pw_), static_cast<int64_t>(pool.threads()) *
                                                                 kItemsPerThread / (kPoints * ng)));
        const int64_t tiles_per_run = ceil_div(ceil_div(nt, runs_per), pw_) * pw_;
        const int64_t runs = ceil_div(nt, tiles_per_run);
        pool.parallel_for(static_cast<size_t>(kPoints * ng * runs), [&](size_t item) {
          const int64_t i = static_cast<int64_t>(item);
          const int64_t xi = i / (ng * runs), g = i / runs % ng, q = i % runs;
          const int64_t r0 = q * tiles_per_run, r1 = std::min(nt, r0 + tiles_per_run);
          run_gemm(xi, groups_[static_cast<size_t>(g)], r0, r1, v, mm);
        });
        pool.parallel_for(static_cast<size_t>(kb_), [&](size_t kb) {
          transform_output(static_cast<int64_t>(kb), t0, nt, mm, y, r);
        });
      }
    }
  }

 private:
  struct Group {
    int64_t first_block, blocks, w_offset;  // w_offset in int16 within one point's weights
  };

  // Split spatially (split_spatially): each thread takes one band of the tiles through all
  // three steps, in its own V and M (no sums cross cores between the GEMM and the output
  // transform, and one barrier per image instead of three per tile block).
  void run_bands(const uint8_t* xp, uint8_t* regions, uint8_t* y, const uint8_t* r,
                 ThreadPool& pool) const {
    const int64_t bands = std::min<int64_t>(pool.threads(), tiles_);
    const int64_t bt = ceil_div(tiles_, bands);
    const int64_t ng = static_cast<int64_t>(groups_.size());
    pool.parallel_for(static_cast<size_t>(bands), [&](size_t q) {
      uint8_t* region = regions + q * region_bytes();
      int16_t* v = reinterpret_cast<int16_t*>(region);
      int32_t* mm = reinterpret_cast<int32_t*>(region + align64(v_bytes()));
      const int64_t end = std::min(tiles_, (static_cast<int64_t>(q) + 1) * bt);
      for (int64_t t0 = static_cast<int64_t>(q) * bt; t0 < end; t0 += tb_) {
        const int64_t nt = std::min(tb_, end - t0);
        for (int64_t cb = 0; cb < cb_; ++cb) transform_input(xp, cb, t0, nt, v);
        for (int64_t xi = 0; xi < kPoints; ++xi)
          for (int64_t g = 0; g < ng; ++g)
            run_gemm(xi, groups_[static_cast<size_t>(g)], 0, nt, v, mm);
        for (int64_t kb = 0; kb < kb_; ++kb) transform_output(kb, t0, nt, mm, y, r);
      }
    });
  }

  size_t region_bytes() const { return align64(v_bytes()) + align64(m_bytes()); }
  size_t image_bytes() const { return align64(static_cast<size_t>(cb_ * hp_ * wp_ * kLanes)); }
  size_t v_bytes() const { return static_cast<size_t>(kPoints * cb_ * tb_ * kLanes) * 2; }
  size_t m_bytes() const { return static_cast<size_t>(kPoints * kb_ * tb_ * kLanes) * 4; }
  ukernel::QS8NchwcRawFn gemm(int64_t nv, int64_t px) const { return gemms_[nv - 1][px - 1]; }

  // U[xi][group][cb][4 pairs][nv][8 lanes][2] from g[k][c][3][3]: (2G) g (2G)^T, |U| <= 1152.
  void transform_weights(const int8_t* w) {
    int64_t offset = 0;
    for (Group& g : groups_) g.w_offset = offset, offset += cb_ * g.blocks * kLanes * kLanes;
    per_point_ = offset;
    u_.assign(static_cast<size_t>(kPoints * per_point_), 0);
    for (int64_t k = 0; k < p_.k; ++k)
      for (int64_t c = 0; c < p_.c; ++c) {
        const int8_t* f = w + (k * p_.c + c) * 9;
        int32_t t[4][3];  // (2G) g
        for (int i = 0; i < 4; ++i)
          for (int j = 0; j < 3; ++j) {
            t[i][j] = 0;
            for (int r = 0; r < 3; ++r) t[i][j] += kG2x2[i][r] * f[r * 3 + j];
          }
        const int64_t kbk = k / kLanes, lane = k % kLanes;
        const Group& g = groups_[static_cast<size_t>(kbk / nv_)];
        const int64_t vb = kbk - g.first_block;
        const int64_t cb = c / kLanes, q = c % kLanes / 2, e = c % 2;
        const int64_t at = g.w_offset + (((cb * 4 + q) * g.blocks + vb) * kLanes + lane) * 2 + e;
        for (int i = 0; i < 4; ++i)
          for (int j = 0; j < 4; ++j) {
            int32_t s = 0;
            for (int r = 0; r < 3; ++r) s += t[i][r] * kG2x2[j][r];
            u_[static_cast<size_t>((i * 4 + j) * per_point_ + at)] = static_cast<int16_t>(s);
          }
      }
  }

  // Input block cb of tiles [t0, t0 + nt) -> V[xi][cb][t - t0], a run along each tile row.
  void transform_input(const uint8_t* xp, int64_t cb, int64_t t0, int64_t nt, int16_t* v) const {
    const uint8_t* plane = xp + cb * hp_ * wp_ * kLanes;
    const size_t v_ps = static_cast<size_t>(cb_ * tb_ * kLanes);
    for (int64_t t = t0; t < t0 + nt;) {
      const int64_t ty = t / tw_, tx = t % tw_, n = std::min(tw_ - tx, t0 + nt - t);
      set_->input(plane + (2 * ty * wp_ + 2 * tx) * kLanes, static_cast<size_t>(wp_ * kLanes),
                  static_cast<size_t>(n), v + (cb * tb_ + t - t0) * kLanes, v_ps);
      t += n;
    }
  }

  // M[xi][the group's blocks][r0, r1) = U[xi][group] V[xi][..][r0, r1).
  void run_gemm(int64_t xi, const Group& g, int64_t r0, int64_t r1, const int16_t* v,
                int32_t* mm) const {
    ukernel::QS8NchwcArgs a;
    a.cb = static_cast<size_t>(cb_);
    a.x_cbs = static_cast<size_t>(tb_ * kLanes * 2);
    a.y_cbs = static_cast<size_t>(tb_ * kLanes);
    const uint8_t* vx = reinterpret_cast<const uint8_t*>(v + xi * cb_ * tb_ * kLanes);
    int32_t* mx = mm + (xi * kb_ + g.first_block) * tb_ * kLanes;
    const int8_t* u = reinterpret_cast<const int8_t*>(u_.data() + xi * per_point_ + g.w_offset);
    const int64_t full = (r1 - r0) / pw_;
    if (full > 0) {
      a.tiles = static_cast<size_t>(full);
      gemm(g.blocks, pw_)(a, vx + r0 * kLanes * 2, u, mx + r0 * kLanes);
    }
    const int64_t done = r0 + full * pw_;
    if (done < r1) {
      a.tiles = 1;
      gemm(g.blocks, r1 - done)(a, vx + done * kLanes * 2, u, mx + done * kLanes);
    }
  }

  // Output block kb of tiles [t0, t0 + nt) -> its pixels of y, a run along each tile row.
  void transform_output(int64_t kb, int64_t t0, int64_t nt, const int32_t* mm, uint8_t* y,
                        const uint8_t* r) const {
    const int64_t oh = p_.oh(), ow = p_.ow();
    ukernel::QS8WinoOutArgs a;
    a.m_ps = static_cast<size_t>(kb_ * tb_ * kLanes);
    a.y_rs = static_cast<size_t>(ow * kLanes);
    a.init = init_.data() + kb * kLanes;
    a.mult = mult_.data() + kb * kLanes;
    const int64_t plane = kb * oh * ow * kLanes;
    for (int64_t t = t0; t < t0 + nt;) {
      const int64_t ty = t / tw_, tx = t % tw_, n = std::min(tw_ - tx, t0 + nt - t);
      a.m = mm + (kb * tb_ + t - t0) * kLanes;
      a.tiles = static_cast<size_t>(n);
      a.rows = static_cast<size_t>(std::min<int64_t>(2, oh - 2 * ty));
      a.last_cols = static_cast<size_t>(std::min<int64_t>(2, ow - 2 * (tx + n - 1)));
      const int64_t at = plane + (2 * ty * ow + 2 * tx) * kLanes;
      a.y = y + at;
      a.r = r ? r + at : nullptr;
      set_->output(a, base_);
      t += n;
    }
  }

  ConvProblem p_;
  const ukernel::QS8WinoUkernels* set_;
  int64_t th_ = 0, tw_ = 0, tiles_ = 0, tb_ = 0, cb_ = 0, kb_ = 0, hp_ = 0, wp_ = 0;
  int64_t nv_ = 1, pw_ = 1, per_point_ = 0;
  bool spatial_ = false;
  ukernel::QS8NchwcRawFn gemms_[ukernel::kQS8NchwcMaxBlocks][ukernel::kQS8NchwcMaxPixels] = {};
  std::vector<Group> groups_;
  AlignedVector<int16_t> u_;
  AlignedVector<int32_t> init_;
  AlignedVector<float> mult_;
  ukernel::QS8GemmParams base_;
};

class WinogradQConv final : public ConvAlgorithm {
 public:
  std::string_view name() const override { return "winograd"; }
  bool supports(const ConvProblem& p) const override { return wino_supports(p); }

  KnobSpace knob_space(const ConvProblem& p, Isa) const override {
    KnobSpace s;
    std::vector<int64_t> tb, nvs, pws;
    for (int64_t v : kTileBlocks)
      if (v < std::max<int64_t>(8, tiles_of(p)) * 2) tb.push_back(v);
    for (int64_t v = 1; v <= ukernel::kQS8NchwcMaxBlocks; ++v)
      if (v <= ceil_div(p.k, kLanes)) nvs.push_back(v);
    for (int64_t v : kBlockedTilePixels) pws.push_back(v);
    s.knobs.push_back({"tile_block", tb, "output tiles per transform block (V and M in cache)"});
    s.knobs.push_back({"nv", nvs, "output-channel blocks per GEMM register tile"});
    s.knobs.push_back({"pw", pws, "tiles per GEMM register tile (capped by the registers)"});
    return s;
  }

  // The largest tile block whose V and M fit kBlockBytes; the GEMM tile with the most
  // products per load within the registers (as the f32 blocked winograd).
  Knobs default_knobs(const ConvProblem& p, Isa isa) const override {
    const int64_t tiles = tiles_of(p);
    const int64_t per_tile =
        kPoints * kLanes * (ceil_div(p.c, kLanes) * 2 + ceil_div(p.k, kLanes) * 4);
    int64_t tb = kTileBlocks[0];
    for (int64_t v : kTileBlocks)
      if (v * per_tile <= kBlockBytes && v < std::max<int64_t>(8, tiles) * 2) tb = v;
    const ukernel::QS8WinoUkernels* set = ukernel::qs8_wino_for(isa, kLanes);
    const auto [nv, pw] =
        most_fmas_per_load(ceil_div(p.k, kLanes), std::min(tb, tiles), ukernel::kQS8NchwcMaxBlocks,
                           [&](int v) { return set ? set->max_pixels(v) : 2; });
    return {{"tile_block", tb}, {"nv", nv}, {"pw", pw}};
  }

  std::unique_ptr<PreparedConv> prepare(const ConvProblem& p, const ConvWeights& w,
                                        const Knobs& knobs, Isa isa) const override {
    p.validate();
    DLAS_CHECK(wino_supports(p), ErrorKind::kUnsupported, "int8 winograd does not support ",
               p.key());
    knob_space(p, isa).validate(knobs, "int8 winograd conv " + p.key());
    const ukernel::QS8WinoUkernels* set = ukernel::qs8_wino_for(isa, kLanes);
    if (!set) return qconv_detail::prepare_int8_via_nchw(p, w, isa);
    Knobs k = default_knobs(p, isa);
    for (const auto& [name, v] : knobs) k[name] = v;
    return std::make_unique<PreparedWinogradQs8>(p, w, k, *set);
  }
};

}  // namespace

const ConvAlgorithm& winograd_qconv_algorithm() {
  static const WinogradQConv algo;
  return algo;
}

}  // namespace dlas

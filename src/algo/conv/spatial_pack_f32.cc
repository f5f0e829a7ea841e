// Spatial-pack convolution: the structure of TVM's conv2d_spatial_pack (arm_cpu), on
// this project's own kernels.
//
//   prepare: weights repacked once into [G][K/g/VC][C/g][KH][KW][VC] (VC = vector
//            multiple of the ISA kernel's lanes; the last block zero-padded).
//   run, per image and group:
//     1. pack: the padded input cut into output tiles of VH x VW pixels, each tile's
//        receptive field stored contiguously as [tile][C/g][rows][cols] with TVM's halo
//        (rows and, for stride_w 1, columns shared by neighbouring kernel taps); for
//        stride_w > 1 the columns are stored stride-resolved per kernel column ([KW][VW])
//        so the inner kernel's column offsets stay constants. With loop order
//        tiles-outer and threads over tiles, each tile is packed just before use into a
//        per-thread buffer (it stays in L1) instead of packing the whole image first;
//     2. compute: for every (VC block, tile) in the chosen loop order the microkernel
//        holds the VH x VW x VC outputs in registers, vector lanes over output channels
//        (broadcast one input pixel, FMA with one weight vector);
//     3. unpack: the tile scattered into NCHW with bias, residual and activation.
// Groups > 1 run as a loop over groups (each a dense conv of C/g -> K/g); depthwise
// convs therefore work but use one lane of VC (the depthwise algorithm is the fast path).
#include <algorithm>
#include <cstring>
#include <limits>
#include <memory>
#include <vector>

#include "algo/conv/conv_impl.h"
#include "algo/microkernels/f32-spack/f32_spack.h"
#include "dlas/algo/conv.h"
#include "dlas/core/aligned_vector.h"
#include "dlas/core/error.h"
#include "dlas/hw/thread_pool.h"

namespace dlas {
namespace {

constexpr int64_t kOrderBlocksOuter = 0;            // VC block outer: its weights stay in L1/L2
constexpr int64_t kOrderTilesOuter = 1;             // tile outer: its packed input stays in L1
constexpr int64_t kParallelBlocks = 0;              // threads split the VC blocks
constexpr int64_t kParallelTiles = 1;               // threads split the tiles
constexpr int64_t kMaxTileFloats = 2 * 16 * 4 * 8;  // vectors * lanes * VH * VW

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

class PreparedSpatialPack final : public PreparedF32Conv {
 public:
  PreparedSpatialPack(const ConvProblem& p, const float* w, const float* bias, const Knobs& kn,
                      Isa isa)
      : p_(p), isa_(isa) {
    const ukernel::F32SpackUkernels& set = ukernel::f32_spack_default(isa);
    vc_ = kn.at("vc") * set.lanes;
    vh_ = kn.at("vh"), vw_ = kn.at("vw");
    order_ = kn.at("loop_order"), parallel_ = kn.at("parallel");
    kernel_ =
        set.select(static_cast<int>(kn.at("vc")), static_cast<int>(vh_), static_cast<int>(vw_));
    DLAS_CHECK(kernel_ != nullptr && vc_ * vh_ * vw_ <= kMaxTileFloats, ErrorKind::kInternal,
               "spatial-pack: no kernel for vc=", vc_, " vh=", vh_, " vw=", vw_);
    cg_ = p.c_per_group(), kg_ = p.k_per_group();
    oh_ = p.oh(), ow_ = p.ow();
    blocks_ = ceil_div(kg_, vc_);
    th_ = ceil_div(oh_, vh_), tw_ = ceil_div(ow_, vw_), tiles_ = th_ * tw_;
    rows_ = (vh_ - 1) * p.stride_h + (p.kh - 1) * p.dil_h + 1;
    raw_ = p.stride_w == 1;
    cols_ = raw_ ? vw_ + (p.kw - 1) * p.dil_w : p.kw * vw_;
    tile_floats_ = cg_ * rows_ * cols_;
    fused_ = order_ == kOrderTilesOuter && parallel_ == kParallelTiles;
    if (bias)
      bias_.assign(bias, bias + p.k);
    else
      bias_.assign(static_cast<size_t>(p.k), 0.f);
    // [g][block][ci][kh][kw][vc]
    const int64_t taps = p.kh * p.kw;
    w_.assign(static_cast<size_t>(p.groups * blocks_ * cg_ * taps * vc_), 0.f);
    for (int64_t g = 0; g < p.groups; ++g)
      for (int64_t k = 0; k < kg_; ++k) {
        const int64_t blk = k / vc_, lane = k % vc_;
        for (int64_t ci = 0; ci < cg_; ++ci)
          for (int64_t t = 0; t < taps; ++t)
            w_[static_cast<size_t>((((g * blocks_ + blk) * cg_ + ci) * taps + t) * vc_ + lane)] =
                w[((g * kg_ + k) * cg_ + ci) * taps + t];
      }
  }

  size_t workspace_bytes(int threads) const override {
    return sizeof(float) * static_cast<size_t>((fused_ ? threads : tiles_) * tile_floats_);
  }

  size_t packed_bytes() const override { return w_.size() * sizeof(float); }

  void run_typed(const float* in, float* out, const float* residual, void* workspace,
                 ThreadPool& pool) const override {
    float* packed = static_cast<float*>(workspace);
    const int64_t nthreads = pool.threads();
    const int64_t in_img = p_.c * p_.h * p_.w, out_img = p_.k * oh_ * ow_;
    for (int64_t img = 0; img < p_.n; ++img)
      for (int64_t g = 0; g < p_.groups; ++g) {
        const float* x = in + img * in_img + g * cg_ * p_.h * p_.w;
        const int64_t k0 = g * kg_;
        float* y = out + img * out_img + k0 * oh_ * ow_;
        const float* r = residual ? residual + img * out_img + k0 * oh_ * ow_ : nullptr;
        if (!fused_)
          pool.parallel_for(static_cast<size_t>(nthreads), [&](size_t slot) {
            const int64_t t0 = tiles_ * slot / nthreads, t1 = tiles_ * (slot + 1) / nthreads;
            for (int64_t t = t0; t < t1; ++t) pack_tile(x, t, packed + t * tile_floats_);
          });
        const float* wg = w_.data() + g * blocks_ * cg_ * p_.kh * p_.kw * vc_;
        const float* bg = bias_.data() + k0;
        pool.parallel_for(static_cast<size_t>(nthreads), [&](size_t slot) {
          const int64_t split = parallel_ == kParallelBlocks ? blocks_ : tiles_;
          const int64_t s0 = split * slot / nthreads, s1 = split * (slot + 1) / nthreads;
          const int64_t b0 = parallel_ == kParallelBlocks ? s0 : 0;
          const int64_t b1 = parallel_ == kParallelBlocks ? s1 : blocks_;
          const int64_t t0 = parallel_ == kParallelTiles ? s0 : 0;
          const int64_t t1 = parallel_ == kParallelTiles ? s1 : tiles_;
          alignas(64) float tile[kMaxTileFloats];
          auto one = [&](int64_t b, int64_t t, const float* xt) {
            kernel_(static_cast<size_t>(cg_), static_cast<size_t>(p_.kh),
                    static_cast<size_t>(p_.kw), xt, static_cast<size_t>(rows_ * cols_),
                    static_cast<size_t>(p_.stride_h * cols_), static_cast<size_t>(p_.dil_h * cols_),
                    static_cast<size_t>(raw_ ? p_.dil_w : vw_), wg + b * cg_ * p_.kh * p_.kw * vc_,
                    tile);
            unpack_tile(tile, b, t, bg, y, r);
          };
          if (fused_) {
            // Pack each tile right before its VC blocks use it: it stays in L1.
            float* xt = packed + slot * tile_floats_;
            for (int64_t t = t0; t < t1; ++t) {
              pack_tile(x, t, xt);
              for (int64_t b = b0; b < b1; ++b) one(b, t, xt);
            }
          } else if (order_ == kOrderBlocksOuter) {
            for (int64_t b = b0; b < b1; ++b)
              for (int64_t t = t0; t < t1; ++t) one(b, t, packed + t * tile_floats_);
          } else {
            for (int64_t t = t0; t < t1; ++t)
              for (int64_t b = b0; b < b1; ++b) one(b, t, packed + t * tile_floats_);
          }
        });
      }
  }

 private:
  // Tile t of one group's input planes x -> dst[ci][rows][cols], zero outside the image:
  // raw halo columns when stride_w is 1, else [KW][VW] stride-resolved columns.
  void pack_tile(const float* x, int64_t t, float* dst) const {
    const int64_t h = p_.h, w = p_.w, kw = p_.kw;
    const int64_t iy0 = (t / tw_) * vh_ * p_.stride_h - p_.pad_t;
    const int64_t ox0 = (t % tw_) * vw_;
    for (int64_t ci = 0; ci < cg_; ++ci) {
      const float* src = x + ci * h * w;
      for (int64_t r = 0; r < rows_; ++r) {
        const int64_t iy = iy0 + r;
        float* d = dst + (ci * rows_ + r) * cols_;
        if (iy < 0 || iy >= h) {
          std::memset(d, 0, sizeof(float) * static_cast<size_t>(cols_));
          continue;
        }
        const float* row = src + iy * w;
        if (raw_) {
          const int64_t ix0 = ox0 - p_.pad_l;
          if (ix0 >= 0 && ix0 + cols_ <= w) {
            std::memcpy(d, row + ix0, sizeof(float) * static_cast<size_t>(cols_));
          } else {
            for (int64_t c = 0; c < cols_; ++c)
              d[c] = (ix0 + c >= 0 && ix0 + c < w) ? row[ix0 + c] : 0.f;
          }
          continue;
        }
        for (int64_t b = 0; b < kw; ++b)
          for (int64_t v = 0; v < vw_; ++v) {
            const int64_t ix = (ox0 + v) * p_.stride_w + b * p_.dil_w - p_.pad_l;
            d[b * vw_ + v] = (ix >= 0 && ix < w) ? row[ix] : 0.f;
          }
      }
    }
  }

  // tile[(vh * VW + vw) * VC + lane] of VC block b, tile t -> y (this group's planes).
  void unpack_tile(const float* tile, int64_t b, int64_t t, const float* bias, float* y,
                   const float* res) const {
    const Epilogue& e = p_.epilogue;
    const float inf = std::numeric_limits<float>::infinity();
    const float lo = e.is_clamp() ? e.clamp_min() : -inf, hi = e.is_clamp() ? e.clamp_max() : inf;
    const int64_t oy0 = (t / tw_) * vh_, ox0 = (t % tw_) * vw_;
    const int64_t rows = std::min(vh_, oh_ - oy0), cols = std::min(vw_, ow_ - ox0);
    const int64_t lanes = std::min(vc_, kg_ - b * vc_);
    for (int64_t l = 0; l < lanes; ++l) {
      const int64_t k = b * vc_ + l;
      const float bk = bias[k];
      for (int64_t i = 0; i < rows; ++i) {
        const int64_t off = (k * oh_ + oy0 + i) * ow_ + ox0;
        float* dst = y + off;
        const float* src = tile + i * vw_ * vc_ + l;
        const float* rr = res ? res + off : nullptr;
        for (int64_t j = 0; j < cols; ++j) {
          float v = src[j * vc_] + bk;
          if (rr) v += rr[j];
          v = v < lo ? lo : v;
          dst[j] = v > hi ? hi : v;
        }
        if (!e.is_clamp()) apply_epilogue(isa_, e, static_cast<size_t>(cols), dst, 0.f, nullptr);
      }
    }
  }

  ConvProblem p_;
  Isa isa_;
  ukernel::F32SpackFn kernel_ = nullptr;
  int64_t vc_ = 0, vh_ = 0, vw_ = 0, order_ = 0, parallel_ = 0;
  int64_t cg_ = 0, kg_ = 0, oh_ = 0, ow_ = 0, blocks_ = 0, th_ = 0, tw_ = 0, tiles_ = 0;
  int64_t rows_ = 0, cols_ = 0, tile_floats_ = 0;
  bool raw_ = true, fused_ = false;
  AlignedVector<float> w_, bias_;
};

class SpatialPackConv final : public ConvAlgorithm {
 public:
  std::string_view name() const override { return "spatial-pack"; }

  bool supports(const ConvProblem& p) const override { return true; }

  KnobSpace knob_space(const ConvProblem& p, Isa isa) const override {
    auto vals = [](const auto& arr) {
      return std::vector<int64_t>(std::begin(arr), std::end(arr));
    };
    KnobSpace s;
    s.knobs.push_back({"vc", vals(ukernel::kSpackVectors),
                       "output channels per register tile, in vectors of the ISA's lanes"});
    s.knobs.push_back({"vh", vals(ukernel::kSpackVh), "output rows per register tile"});
    s.knobs.push_back({"vw", vals(ukernel::kSpackVw), "output columns per register tile"});
    s.knobs.push_back(
        {"loop_order",
         {kOrderTilesOuter, kOrderBlocksOuter},
         "1: tile outer (packed tile stays in L1); 0: VC block outer (weights stay)"});
    s.knobs.push_back({"parallel",
                       {kParallelTiles, kParallelBlocks},
                       "1: threads split the tiles; 0: threads split the VC blocks"});
    return s;
  }

  // Register budget: VH * VW * vc accumulators + vc weight vectors + 1 broadcast must fit
  // 16 vector registers (SSE2 / AVX2) or 32 (AVX-512). Among the shapes that fit, the one
  // with most useful outputs per tile (ragged edges count as waste) wins.
  Knobs default_knobs(const ConvProblem& p, Isa isa) const override {
    const int64_t lanes = ukernel::f32_spack_default(isa).lanes;
    const int64_t regs = base_isa(isa) == Isa::kAvx512 ? 32 : 16;
    const int64_t kg = p.k_per_group(), oh = p.oh(), ow = p.ow();
    const int64_t vc = kg >= 2 * lanes ? 2 : 1;
    int64_t best_vh = 1, best_vw = 4;
    double best = -1;
    for (int vh : ukernel::kSpackVh)
      for (int vw : ukernel::kSpackVw) {
        if (vc * vh * vw + vc + 1 > regs) continue;
        const double used = static_cast<double>(oh * ow) /
                            static_cast<double>(ceil_div(oh, vh) * vh * ceil_div(ow, vw) * vw);
        const double score = used * vh * vw;
        if (score > best + 1e-9) best = score, best_vh = vh, best_vw = vw;
      }
    const int64_t tiles = ceil_div(oh, best_vh) * ceil_div(ow, best_vw);
    const int64_t blocks = ceil_div(kg, vc * lanes);
    return {{"vc", vc},
            {"vh", best_vh},
            {"vw", best_vw},
            {"loop_order", kOrderTilesOuter},
            {"parallel", tiles >= 4 * blocks || tiles >= 16 ? kParallelTiles : kParallelBlocks}};
  }

  std::unique_ptr<PreparedConv> prepare(const ConvProblem& p, const ConvWeights& view,
                                        const Knobs& knobs, Isa isa) const override {
    const float* weights = view.f32_data();
    const float* bias = view.bias;
    p.validate();
    knob_space(p, isa).validate(knobs, "spatial-pack");
    return std::make_unique<PreparedSpatialPack>(p, weights, bias, knobs, isa);
  }
};

}  // namespace

const ConvAlgorithm& spatial_pack_conv_algorithm() {
  static const SpatialPackConv algo;
  return algo;
}

}  // namespace dlas

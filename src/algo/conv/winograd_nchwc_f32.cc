// winograd on blocked layouts (nchw8c / nchw16c): F(2x2,3x3) and F(4x4,3x3) (Lavin & Gray)
// for 3x3 stride-1 dilation-1 ungrouped convs, any padding, with the channel block as the
// vector lanes -- no gather across channels and no reorder around the layer.
//
//   prepare: U = G g G^T per (k, c) in double (the NCHW winograd's transform), packed per
//            transform point xi and output-block group as the f32-nchwc kernels' 1x1
//            weights: [xi][group][C blocks][B in lanes][nv][B], zero past C and K.
//   run, per image and block of `tile_block` output tiles (m x m pixels each):
//     1. input transform, split over input-channel blocks: each tile's alpha x alpha pixel
//        vectors (zero outside the image) are gathered and transformed, V = B^T d B, by the
//        f32-wino kernel whose lanes are the block's channels, into V[xi][cb][tile][B] --
//        per point a blocked activation whose "pixels" are the tiles;
//     2. alpha^2 GEMMs M[xi] = U[xi] V[xi], split over (xi, block group, tile run): the
//        f32-nchwc flat 1x1 kernels (nv output blocks x pw tiles in registers, one
//        broadcast per tile and input channel), into M[xi][kb][tile][B];
//     3. output transform, split over output-channel blocks: Y = A^T M A per tile by the
//        f32-wino kernel, then the residual, and bias and activation per lane through the
//        f32-vaffine kernel, into the output.
// The block keeps V and M (alpha^2 (C + K) floats per tile) near L2 size. Where the layer
// splits spatially (split_spatially, conv_impl.h), each thread instead keeps one band of
// the image's tiles through all three steps (run_spatial).
#include <algorithm>
#include <cstring>
#include <limits>
#include <memory>
#include <vector>

#include "algo/conv/conv_impl.h"
#include "algo/conv/winograd_common.h"
#include "algo/microkernels/f32-nchwc/f32_nchwc.h"
#include "algo/microkernels/f32-wino/f32_wino.h"
#include "dlas/algo/conv.h"
#include "dlas/algo/eltwise.h"
#include "dlas/algo/layout.h"
#include "dlas/core/aligned_vector.h"
#include "dlas/core/error.h"
#include "dlas/hw/thread_pool.h"

namespace dlas {
namespace {

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// Target bytes of V + M per tile block (as the NCHW winograd's kBlockBytes).
constexpr int64_t kBlockBytes = 1 << 20;
constexpr int64_t kTileBlocks[] = {8, 16, 32, 64, 128, 256};
// Tiles per register tile (the `pw` knob; capped by the kernel set's register budget).
constexpr const auto& kPixelChoices = kBlockedTilePixels;

// The transform kernels whose lanes are the block (nullptr when the path has none).
const ukernel::F32WinoUkernel* wino_for(Isa isa, int64_t lanes) {
  const ukernel::F32WinoUkernel* best = nullptr;
  for (const ukernel::F32WinoUkernel& u : ukernel::f32_wino_ukernels())
    if (u.lanes == lanes && u.isa <= isa && isa_supported(u.isa) && (!best || u.isa > best->isa))
      best = &u;
  return best;
}

int64_t tiles_of(const ConvProblem& p, int64_t m) {
  return ceil_div(p.oh(), m) * ceil_div(p.ow(), m);
}

class PreparedWinogradNchwc final : public PreparedF32Conv {
 public:
  PreparedWinogradNchwc(const ConvProblem& p, const float* w, const float* bias, const Knobs& kn,
                        Isa isa, const ukernel::F32NchwcUkernels& set,
                        const ukernel::F32WinoUkernel& wino)
      : p_(p), isa_(isa), wino_(&wino) {
    b_ = layout_block(p.y_layout);
    m_ = kn.at("variant");
    alpha_ = m_ + 2;
    a2_ = alpha_ * alpha_;
    th_ = ceil_div(p.oh(), m_), tw_ = ceil_div(p.ow(), m_);
    tiles_ = th_ * tw_;
    tb_ = std::min(kn.at("tile_block"), tiles_);
    nblk_ = ceil_div(tiles_, tb_);
    cb_ = ceil_div(p.c, b_), kb_ = ceil_div(p.k, b_);
    nv_ = std::min<int64_t>(kn.at("nv"), kb_);
    pw_ = std::min<int64_t>({kn.at("pw"), set.max_pixels(static_cast<int>(nv_)), tb_});
    for (int nv = 1; nv <= 4; ++nv)
      for (int px = 1; px <= pw_; ++px)
        kernels_[nv - 1][px - 1] = set.select(nv, px, static_cast<int>(b_), 1, 1);
    for (int64_t j = 0; j < kb_; j += nv_) groups_.push_back({j, std::min(nv_, kb_ - j), 0});
    // A run of tiles ends in a narrower register tile of any width below pw.
    for (const Group& g : groups_)
      for (int64_t px = 1; px <= pw_; ++px)
        DLAS_CHECK(kernel(g.blocks, px), ErrorKind::kInternal, "winograd (blocked): no kernel for ",
                   g.blocks, " blocks x ", px, " tiles");
    transform_weights(w);
    bias_.assign(static_cast<size_t>(kb_ * b_), 0.f);
    if (bias) std::copy(bias, bias + p.k, bias_.begin());
    zeros_.assign(static_cast<size_t>(4 * b_), 0.f);
    ones_.assign(static_cast<size_t>(b_), 1.f);
    spatial_ = split_spatially(
        p.oh() * p.ow(),
        static_cast<int64_t>(sizeof(float)) * b_ * (cb_ * p.h * p.w + kb_ * p.oh() * p.ow()),
        static_cast<int64_t>(sizeof(float) * u_.size()));
  }

  size_t workspace_bytes(int) const override { return (v_floats() + m_floats()) * sizeof(float); }
  size_t packed_bytes() const override { return (u_.size() + bias_.size()) * sizeof(float); }

  void run_typed(const float* in, float* out, const float* residual, void* workspace,
                 ThreadPool& pool) const override {
    float* v = static_cast<float*>(workspace);
    float* mm = v + v_floats();
    const int64_t in_img = cb_ * b_ * p_.h * p_.w, out_img = kb_ * b_ * p_.oh() * p_.ow();
    if (spatial_) {
      run_spatial(in, out, residual, v, mm, pool);
      return;
    }
    for (int64_t img = 0; img < p_.n; ++img)
      for (int64_t blk = 0; blk < nblk_; ++blk) {
        const int64_t t0 = blk * tb_, nt = std::min(tb_, tiles_ - t0);
        const float* x = in + img * in_img;
        pool.parallel_for(static_cast<size_t>(cb_), [&](size_t cb) {
          transform_input(x, static_cast<int64_t>(cb), t0, nt, 0, v);
        });
        // GEMM items: (point, block group, run of tiles), about kItemsPerThread per thread.
        const int64_t runs_per = std::max<int64_t>(
            1, std::min(ceil_div(nt, pw_), static_cast<int64_t>(pool.threads()) * kItemsPerThread /
                                               (a2_ * static_cast<int64_t>(groups_.size()))));
        const int64_t tiles_per_run = ceil_div(ceil_div(nt, runs_per), pw_) * pw_;
        const int64_t runs = ceil_div(nt, tiles_per_run);
        const int64_t ng = static_cast<int64_t>(groups_.size());
        pool.parallel_for(static_cast<size_t>(a2_ * ng * runs), [&](size_t item) {
          const int64_t i = static_cast<int64_t>(item);
          const int64_t xi = i / (ng * runs), g = i / runs % ng, r = i % runs;
          const int64_t r0 = r * tiles_per_run, r1 = std::min(nt, r0 + tiles_per_run);
          gemm(xi, groups_[static_cast<size_t>(g)], r0, r1, v, mm);
        });
        float* y = out + img * out_img;
        const float* res = residual ? residual + img * out_img : nullptr;
        pool.parallel_for(static_cast<size_t>(kb_), [&](size_t kb) {
          transform_output(static_cast<int64_t>(kb), t0, nt, 0, mm, y, res);
        });
      }
  }

 private:
  struct Group {
    int64_t first_block, blocks, w_offset;
  };

  // Split spatially (split_spatially): each thread keeps one band of the image's tiles (its
  // rows) through all three steps. A transform block then holds one slice of every band
  // (sb tiles each, at V and M index q * sb for band q), so each thread reads the rows the
  // layer before wrote on it, and the GEMM and output transform the V and M it made.
  void run_spatial(const float* in, float* out, const float* residual, float* v, float* mm,
                   ThreadPool& pool) const {
    const int64_t in_img = cb_ * b_ * p_.h * p_.w, out_img = kb_ * b_ * p_.oh() * p_.ow();
    const int64_t bands = std::min<int64_t>({pool.threads(), tiles_, tb_});
    const int64_t bt = ceil_div(tiles_, bands);            // tiles per band
    const int64_t sb = std::max<int64_t>(1, tb_ / bands);  // tiles of a band per block
    const int64_t blocks = ceil_div(bt, sb);
    const int64_t ng = static_cast<int64_t>(groups_.size());
    // Band q's tiles in block k: [first, first + count).
    auto slice = [&](int64_t q, int64_t k, int64_t& first) {
      first = q * bt + k * sb;
      const int64_t end = std::min({q * bt + bt, first + sb, tiles_});
      return std::max<int64_t>(0, end - first);
    };
    for (int64_t img = 0; img < p_.n; ++img) {
      const float* x = in + img * in_img;
      float* y = out + img * out_img;
      const float* res = residual ? residual + img * out_img : nullptr;
      for (int64_t k = 0; k < blocks; ++k) {
        pool.parallel_for(static_cast<size_t>(bands * cb_), [&](size_t item) {
          const int64_t q = static_cast<int64_t>(item) / cb_, cb = static_cast<int64_t>(item) % cb_;
          int64_t t0 = 0;
          const int64_t nt = slice(q, k, t0);
          if (nt > 0) transform_input(x, cb, t0, nt, q * sb, v);
        });
        pool.parallel_for(static_cast<size_t>(bands * a2_ * ng), [&](size_t item) {
          const int64_t i = static_cast<int64_t>(item);
          const int64_t q = i / (a2_ * ng), xi = i / ng % a2_, g = i % ng;
          int64_t t0 = 0;
          const int64_t nt = slice(q, k, t0);
          if (nt > 0) gemm(xi, groups_[static_cast<size_t>(g)], q * sb, q * sb + nt, v, mm);
        });
        pool.parallel_for(static_cast<size_t>(bands * kb_), [&](size_t item) {
          const int64_t q = static_cast<int64_t>(item) / kb_, kb = static_cast<int64_t>(item) % kb_;
          int64_t t0 = 0;
          const int64_t nt = slice(q, k, t0);
          if (nt > 0) transform_output(kb, t0, nt, q * sb, mm, y, res);
        });
      }
    }
  }

  size_t v_floats() const { return static_cast<size_t>(a2_ * cb_ * tb_ * b_); }
  size_t m_floats() const { return static_cast<size_t>(a2_ * kb_ * tb_ * b_); }
  // One tile's gathered points (input) or transformed pixels (output): alpha^2 vectors of
  // at most 16 lanes, on the stack.
  static constexpr int64_t kScratch = 36 * 16;
  ukernel::F32NchwcFn kernel(int64_t nv, int64_t px) const { return kernels_[nv - 1][px - 1]; }

  // U[xi][group][cb][in lane][nv][B] from g[k][c][3][3] (u = G g G^T, winograd_common.h).
  void transform_weights(const float* w) {
    const std::vector<float> ut =
        winograd_detail::transform_weights(w, p_.k, p_.c, m_);  // [xi][k][c]
    const int64_t per_xi = cb_ * b_ * kb_ * b_;  // every group's weights of one point
    int64_t offset = 0;
    for (Group& gr : groups_) gr.w_offset = offset, offset += cb_ * b_ * gr.blocks * b_;
    u_.assign(static_cast<size_t>(a2_ * per_xi), 0.f);
    for (int64_t xi = 0; xi < a2_; ++xi)
      for (const Group& gr : groups_) {
        float* ug = u_.data() + xi * per_xi + gr.w_offset;
        for (int64_t c = 0; c < p_.c; ++c)
          for (int64_t v = 0; v < gr.blocks; ++v)
            for (int64_t l = 0; l < b_; ++l) {
              const int64_t k = (gr.first_block + v) * b_ + l;
              if (k < p_.k)
                ug[(c * gr.blocks + v) * b_ + l] =
                    ut[static_cast<size_t>((xi * p_.k + k) * p_.c + c)];
            }
      }
  }

  // Input block cb of tiles [t0, t0 + nt) -> V[xi][cb][j0 + t - t0][B] (point stride cb_ tb B).
  void transform_input(const float* x, int64_t cb, int64_t t0, int64_t nt, int64_t j0,
                       float* v) const {
    alignas(64) float d[kScratch];
    const int64_t h = p_.h, w = p_.w, b = b_;
    const float* plane = x + cb * h * w * b;
    const auto fn = wino_->input(static_cast<int>(m_));
    const size_t vs = static_cast<size_t>(cb_ * tb_ * b);
    for (int64_t j = 0; j < nt; ++j) {
      const int64_t t = t0 + j;
      const int64_t y0 = t / tw_ * m_ - p_.pad_t, x0 = t % tw_ * m_ - p_.pad_l;
      const bool inside = y0 >= 0 && x0 >= 0 && y0 + alpha_ <= h && x0 + alpha_ <= w;
      for (int64_t r = 0; r < alpha_; ++r) {
        const int64_t yy = y0 + r;
        if (inside) {
          std::memcpy(d + r * alpha_ * b, plane + (yy * w + x0) * b,
                      sizeof(float) * static_cast<size_t>(alpha_ * b));
          continue;
        }
        for (int64_t s = 0; s < alpha_; ++s) {
          const int64_t xx = x0 + s;
          float* dst = d + (r * alpha_ + s) * b;
          if (yy >= 0 && yy < h && xx >= 0 && xx < w)
            std::memcpy(dst, plane + (yy * w + xx) * b, sizeof(float) * static_cast<size_t>(b));
          else
            std::memset(dst, 0, sizeof(float) * static_cast<size_t>(b));
        }
      }
      fn(static_cast<size_t>(b), d, static_cast<size_t>(b), v + (cb * tb_ + j0 + j) * b, vs);
    }
  }

  // M[xi][group's blocks][r0..r1) = U[xi][group] V[xi][..][r0..r1).
  void gemm(int64_t xi, const Group& g, int64_t r0, int64_t r1, const float* v, float* mm) const {
    const float inf = std::numeric_limits<float>::infinity();
    ukernel::F32NchwcArgs a;
    a.cb = static_cast<size_t>(cb_);
    a.x_cbs = static_cast<size_t>(tb_ * b_);
    a.y_cbs = static_cast<size_t>(tb_ * b_);
    a.bias = zeros_.data();
    a.lo = -inf, a.hi = inf;
    const float* vx = v + xi * cb_ * tb_ * b_;
    float* mx = mm + (xi * kb_ + g.first_block) * tb_ * b_;
    const float* u = u_.data() + xi * cb_ * b_ * kb_ * b_ + g.w_offset;
    const int64_t full = (r1 - r0) / pw_;
    if (full > 0) {
      a.tiles = static_cast<size_t>(full);
      kernel(g.blocks, pw_)(a, vx + r0 * b_, u, mx + r0 * b_);
    }
    const int64_t done = r0 + full * pw_;
    if (done < r1) {
      a.tiles = 1;
      kernel(g.blocks, r1 - done)(a, vx + done * b_, u, mx + done * b_);
    }
  }

  // Output block kb of tiles [t0, t0 + nt), at M[xi][kb][j0 + t - t0], -> out (one image,
  // blocked): per tile the
  // transform into m x m pixel vectors, then per row the residual and, through the
  // per-channel affine kernel (scale 1, shift the bias), bias and activation.
  void transform_output(int64_t kb, int64_t t0, int64_t nt, int64_t j0, const float* mm, float* out,
                        const float* res) const {
    alignas(64) float o[kScratch];
    const Epilogue& e = p_.epilogue;
    const float inf = std::numeric_limits<float>::infinity();
    const int64_t oh = p_.oh(), ow = p_.ow(), b = b_;
    const auto fn = wino_->output(static_cast<int>(m_));
    const size_t ms = static_cast<size_t>(kb_ * tb_ * b);
    const float* bias = bias_.data() + kb * b;
    float* plane = out + kb * oh * ow * b;
    const float* rplane = res ? res + kb * oh * ow * b : nullptr;
    for (int64_t j = 0; j < nt; ++j) {
      const int64_t t = t0 + j;
      fn(static_cast<size_t>(b), mm + (kb * tb_ + j0 + j) * b, ms, o, static_cast<size_t>(b), 0.f,
         -inf, inf);
      const int64_t y0 = t / tw_ * m_, x0 = t % tw_ * m_;
      const int64_t rows = std::min(m_, oh - y0), cols = std::min(m_, ow - x0);
      for (int64_t i = 0; i < rows; ++i) {
        float* src = o + i * m_ * b;
        const int64_t at = ((y0 + i) * ow + x0) * b;
        if (rplane)
          for (int64_t q = 0; q < cols * b; ++q) src[q] += rplane[at + q];
        channel_affine(isa_, e.act, e.p0, e.p1, static_cast<size_t>(cols), static_cast<size_t>(b),
                       src, ones_.data(), bias, plane + at);
      }
    }
  }

  ConvProblem p_;
  Isa isa_;
  const ukernel::F32WinoUkernel* wino_;
  int64_t b_ = 16, m_ = 4, alpha_ = 6, a2_ = 36, th_ = 0, tw_ = 0, tiles_ = 0, tb_ = 0;
  int64_t nblk_ = 0, cb_ = 0, kb_ = 0, nv_ = 1, pw_ = 1;
  bool spatial_ = false;
  ukernel::F32NchwcFn kernels_[4][ukernel::kNchwcMaxPixels] = {};
  std::vector<Group> groups_;
  AlignedVector<float> u_, bias_, zeros_, ones_;
};

class WinogradNchwcConv final : public ConvAlgorithm {
 public:
  std::string_view name() const override { return "winograd"; }

  // f32 3x3 stride-1 dilation-1 ungrouped convs with blocked input and output.
  bool supports(const ConvProblem& p) const override {
    return p.types() == ConvTypes::kF32 && is_blocked(p.y_layout) && p.x_layout == p.y_layout &&
           p.kh == 3 && p.kw == 3 && p.stride_h == 1 && p.stride_w == 1 && p.dil_h == 1 &&
           p.dil_w == 1 && p.groups == 1;
  }

  KnobSpace knob_space(const ConvProblem& p, Isa) const override {
    KnobSpace s;
    s.knobs.push_back({"variant", {2, 4}, "output tile m of F(m x m, 3 x 3)"});
    std::vector<int64_t> tb;
    const int64_t cap = std::max<int64_t>(8, tiles_of(p, 2));
    for (int64_t v : kTileBlocks)
      if (v < cap * 2) tb.push_back(v);
    s.knobs.push_back({"tile_block", tb, "output tiles per transform block (V and M in cache)"});
    std::vector<int64_t> nv;
    for (int v : ukernel::kNchwcBlocks)
      if (v <= ceil_div(p.k, layout_block(p.y_layout))) nv.push_back(v);
    s.knobs.push_back({"nv", nv, "output-channel blocks per GEMM register tile"});
    s.knobs.push_back({"pw",
                       std::vector<int64_t>(std::begin(kPixelChoices), std::end(kPixelChoices)),
                       "tiles per GEMM register tile (capped by the register budget of nv)"});
    return s;
  }

  // F(4,3) once a side has two tiles of 4 (F(2,3) below: its transforms cost less per
  // output where F(4,3)'s tiles would be mostly padding); the largest tile block whose V
  // and M fit kBlockBytes, or, where the transformed weights U are larger, U's size: every
  // tile block streams all of U, so a block's own V and M should be no smaller than that
  // stream (vgg16_bn's 512->512 28x28 layers at 224x224: 8.4 ms with blocks of 8 tiles,
  // 3.3 ms with one block of all 49; AMD EPYC Zen 5, 2 threads); the GEMM tile with the
  // most FMAs per load within the set's default budget.
  Knobs default_knobs(const ConvProblem& p, Isa isa) const override {
    const int64_t b = layout_block(p.y_layout);
    const int64_t m = std::min(p.oh(), p.ow()) >= 8 ? 4 : 2;
    const int64_t a2 = (m + 2) * (m + 2), tiles = tiles_of(p, m);
    const int64_t per_tile = a2 * (ceil_div(p.c, b) + ceil_div(p.k, b)) * b * 4;
    const int64_t u_bytes = a2 * ceil_div(p.c, b) * ceil_div(p.k, b) * b * b * 4;
    const int64_t budget = std::max(kBlockBytes, u_bytes);
    int64_t tb = kTileBlocks[0];
    for (int64_t v : kTileBlocks)
      if (v * per_tile <= budget && v < std::max<int64_t>(8, tiles) * 2) tb = v;
    const ukernel::F32NchwcUkernels* set = ukernel::f32_nchwc_for(isa, static_cast<int>(b));
    const int64_t kb = ceil_div(p.k, b), rows = std::min(tb, tiles);
    const auto [best_nv, pw] = most_fmas_per_load(
        kb, rows, ukernel::kNchwcBlocks[std::size(ukernel::kNchwcBlocks) - 1], [&](int nv) {
          return set ? std::min(set->max_pixels(nv), set->default_accumulators / nv) : 8;
        });
    return {{"variant", m}, {"tile_block", tb}, {"nv", best_nv}, {"pw", pw}};
  }

  std::unique_ptr<PreparedConv> prepare(const ConvProblem& p, const ConvWeights& weights,
                                        const Knobs& knobs, Isa isa) const override {
    DLAS_CHECK(supports(p), ErrorKind::kUnsupported, "winograd (blocked) does not support ",
               p.key());
    const int64_t b = layout_block(p.y_layout);
    const ukernel::F32NchwcUkernels* set = ukernel::f32_nchwc_for(isa, static_cast<int>(b));
    const ukernel::F32WinoUkernel* wino = wino_for(isa, b);
    DLAS_CHECK(set && wino, ErrorKind::kUnsupported, "layout ", layout_name(p.y_layout),
               " needs vectors of ", b, " floats, which the ", isa_name(isa), " path lacks");
    knob_space(p, isa).validate(knobs, "winograd");
    return std::make_unique<PreparedWinogradNchwc>(p, weights.f32_data(), weights.bias, knobs, isa,
                                                   *set, *wino);
  }
};

}  // namespace

const ConvAlgorithm& winograd_nchwc_conv_algorithm() {
  static const WinogradNchwcConv algo;
  return algo;
}

}  // namespace dlas

// Winograd convolution F(2x2,3x3) and F(4x4,3x3) (Lavin & Gray) for 3x3 stride-1
// dilation-1 ungrouped convs, any padding.
//
//   prepare: U = G g G^T per (k, c) in double, packed per transform point xi into the
//            GEMM microkernel's MR panels: U[xi][K/MR][C][MR].
//   run, per block of `tile_block` output tiles (m x m pixels each) of one image:
//     1. gather each tile's alpha x alpha input patch (zero outside the image) and
//        transform V = B^T d B, one vector lane per tile, into NR-column panels
//        V[xi][panel][C][NR] -- exactly the B layout the microkernel reads;
//     2. alpha^2 GEMMs M[xi] = U[xi] (K x C) * V[xi] (C x tiles) by the microkernel;
//     3. Y = A^T M A + bias (clamp fused) per tile panel, scattered into NCHW with the
//        residual add and any other activation.
//   The block keeps V and M (alpha^2 (C + K) floats per tile) near L2 size.
// Transform matrices and their derivation: microkernels/f32-wino/f32_wino_template.h.
#include <algorithm>
#include <bit>
#include <cstring>
#include <limits>
#include <memory>
#include <vector>

#include "algo/conv/conv_impl.h"
#include "algo/conv/winograd_common.h"
#include "algo/microkernels/f32-gemm/f32_gemm.h"
#include "algo/microkernels/f32-wino/f32_wino.h"
#include "dlas/algo/conv.h"
#include "dlas/core/aligned_vector.h"
#include "dlas/core/error.h"
#include "dlas/hw/thread_pool.h"

namespace dlas {
namespace {

constexpr int64_t kParallelTiles = 0;     // each thread runs whole tile blocks
constexpr int64_t kParallelChannels = 1;  // all threads share each block, split over C/K
// Per-pass target for V + M. Each point's GEMM only touches 1/alpha^2 of them, so the
// block may exceed L2: on Zen3 (512 KiB L2) c64 32x32 ran 88 GFLOP/s at 8 tiles (256 KiB
// budget) and 136 at 32-64 tiles (U reuse per pass grows with the block).
constexpr int64_t kBlockBytes = 1 << 20;
constexpr int64_t kMaxNr = 256;  // tile coordinates of one panel live on the stack
constexpr int64_t kTileBlocks[] = {8, 16, 32, 64, 128, 256};

int64_t round_up(int64_t x, int64_t m) { return (x + m - 1) / m * m; }
size_t align64(size_t bytes) { return (bytes + 63) / 64 * 64; }

int64_t tiles_of(const ConvProblem& p, int64_t m) {
  return ((p.oh() + m - 1) / m) * ((p.ow() + m - 1) / m);
}

std::vector<int64_t> tile_block_values(const ConvProblem& p) {
  // Blocks beyond the smallest power of two covering an image's F(2,3) tiles only waste.
  const int64_t cap = std::max<int64_t>(8, std::bit_ceil(static_cast<uint64_t>(tiles_of(p, 2))));
  std::vector<int64_t> v;
  for (int64_t b : kTileBlocks)
    if (b <= cap) v.push_back(b);
  return v;
}

class PreparedWinograd final : public PreparedF32Conv {
 public:
  PreparedWinograd(const ConvProblem& p, const float* w, const float* bias, const Knobs& kn,
                   Isa isa)
      : p_(p), isa_(isa) {
    m_ = static_cast<int>(kn.at("variant"));
    alpha_ = m_ + 2;
    a2_ = alpha_ * alpha_;
    gemm_ = ukernel::f32_gemm_ukernels_for(isa).at(static_cast<size_t>(kn.at("ukernel")));
    wino_ = &ukernel::f32_wino_default(isa);
    mr_ = gemm_->mr, nr_ = gemm_->nr;
    DLAS_CHECK(nr_ <= kMaxNr, ErrorKind::kInternal, "winograd: NR ", nr_, " > ", kMaxNr);
    parallel_ = kn.at("parallel");
    th_ = (p.oh() + m_ - 1) / m_, tw_ = (p.ow() + m_ - 1) / m_;
    tiles_ = th_ * tw_;
    tb_ = round_up(std::min(kn.at("tile_block"), tiles_), nr_);
    nblk_ = (tiles_ + tb_ - 1) / tb_;
    kp_ = (p.k + mr_ - 1) / mr_;
    if (bias)
      bias_.assign(bias, bias + p.k);
    else
      bias_.assign(static_cast<size_t>(p.k), 0.f);
    b_off_.resize(static_cast<size_t>(p.c));
    for (int64_t c = 0; c < p.c; ++c) b_off_[c] = c * nr_;
    transform_weights(w);
  }

  size_t workspace_bytes(int threads) const override {
    const size_t shared = v_bytes() + m_bytes();
    const size_t per_thread = align64(sizeof(float) * static_cast<size_t>(a2_ * nr_)) +
                              align64(sizeof(float) * static_cast<size_t>(m_ * m_ * nr_));
    if (parallel_ == kParallelTiles) return static_cast<size_t>(threads) * (shared + per_thread);
    return shared + static_cast<size_t>(threads) * per_thread;
  }

  size_t packed_bytes() const override { return u_.size() * sizeof(float); }

  void run_typed(const float* in, float* out, const float* residual, void* workspace,
                 ThreadPool& pool) const override {
    const int64_t nthreads = pool.threads();
    const size_t scratch = align64(sizeof(float) * static_cast<size_t>(a2_ * nr_)) +
                           align64(sizeof(float) * static_cast<size_t>(m_ * m_ * nr_));
    char* ws = static_cast<char*>(workspace);
    const int64_t in_img = p_.c * p_.h * p_.w, out_img = p_.k * p_.oh() * p_.ow();
    const int64_t total = p_.n * nblk_;
    auto slot_scratch = [&](char* base, float*& d, float*& o) {
      d = reinterpret_cast<float*>(base);
      o = reinterpret_cast<float*>(base + align64(sizeof(float) * static_cast<size_t>(a2_ * nr_)));
    };
    if (parallel_ == kParallelTiles) {
      const size_t per = v_bytes() + m_bytes() + scratch;
      pool.parallel_for(static_cast<size_t>(nthreads), [&](size_t slot) {
        char* base = ws + slot * per;
        float* v = reinterpret_cast<float*>(base);
        float* mm = reinterpret_cast<float*>(base + v_bytes());
        float *d, *o;
        slot_scratch(base + v_bytes() + m_bytes(), d, o);
        for (int64_t b = static_cast<int64_t>(slot); b < total; b += nthreads) {
          const int64_t img = b / nblk_, t0 = (b % nblk_) * tb_;
          const int64_t nt = std::min(tb_, tiles_ - t0);
          const float* res = residual ? residual + img * out_img : nullptr;
          transform_input(in + img * in_img, t0, nt, 0, p_.c, v, d);
          for (int64_t xi = 0; xi < a2_; ++xi) gemm(xi, 0, kp_, nt, v, mm);
          transform_output(t0, nt, 0, p_.k, mm, out + img * out_img, res, o);
        }
      });
      return;
    }
    float* v = reinterpret_cast<float*>(ws);
    float* mm = reinterpret_cast<float*>(ws + v_bytes());
    char* slots = ws + v_bytes() + m_bytes();
    for (int64_t b = 0; b < total; ++b) {
      const int64_t img = b / nblk_, t0 = (b % nblk_) * tb_;
      const int64_t nt = std::min(tb_, tiles_ - t0);
      const float* res = residual ? residual + img * out_img : nullptr;
      pool.parallel_for(static_cast<size_t>(nthreads), [&](size_t slot) {
        float *d, *o;
        slot_scratch(slots + slot * scratch, d, o);
        const int64_t c0 = p_.c * slot / nthreads, c1 = p_.c * (slot + 1) / nthreads;
        transform_input(in + img * in_img, t0, nt, c0, c1, v, d);
      });
      pool.parallel_for(static_cast<size_t>(a2_ * kp_), [&](size_t i) {
        const int64_t xi = static_cast<int64_t>(i) / kp_, kp = static_cast<int64_t>(i) % kp_;
        gemm(xi, kp, kp + 1, nt, v, mm);
      });
      pool.parallel_for(static_cast<size_t>(nthreads), [&](size_t slot) {
        float *d, *o;
        slot_scratch(slots + slot * scratch, d, o);
        const int64_t k0 = p_.k * slot / nthreads, k1 = p_.k * (slot + 1) / nthreads;
        transform_output(t0, nt, k0, k1, mm, out + img * out_img, res, o);
      });
    }
  }

 private:
  size_t v_bytes() const { return align64(sizeof(float) * static_cast<size_t>(a2_ * p_.c * tb_)); }
  size_t m_bytes() const { return align64(sizeof(float) * static_cast<size_t>(a2_ * p_.k * tb_)); }

  // U[xi][kp][c][mr] from g[k][c][3][3] (u = G g G^T, winograd_common.h).
  void transform_weights(const float* w) {
    const std::vector<float> ut =
        winograd_detail::transform_weights(w, p_.k, p_.c, m_);  // [xi][k][c]
    u_.assign(static_cast<size_t>(a2_ * kp_ * p_.c * mr_), 0.f);
    for (int64_t xi = 0; xi < a2_; ++xi)
      for (int64_t kp = 0; kp < kp_; ++kp) {
        const int64_t k0 = kp * mr_;
        gemm_->pack(static_cast<size_t>(mr_), static_cast<size_t>(std::min(mr_, p_.k - k0)),
                    static_cast<size_t>(p_.c), ut.data() + (xi * p_.k + k0) * p_.c,
                    static_cast<size_t>(p_.c), u_.data() + (xi * kp_ + kp) * p_.c * mr_);
      }
  }

  // Tiles [t0, t0 + nt) of one image, channels [c0, c1) -> V[xi][panel][c][nr]; point
  // stride C * tb. Columns past nt are zero so the GEMM reads defined data.
  void transform_input(const float* img, int64_t t0, int64_t nt, int64_t c0, int64_t c1, float* v,
                       float* d) const {
    const int64_t vs = p_.c * tb_, npan = (nt + nr_ - 1) / nr_;
    const int64_t h = p_.h, w = p_.w;
    const auto fn = wino_->input(m_);
    int64_t y0s[kMaxNr], x0s[kMaxNr];
    for (int64_t pan = 0; pan < npan; ++pan) {
      const int64_t ncols = std::min(nr_, nt - pan * nr_);
      for (int64_t j = 0; j < ncols; ++j) {
        const int64_t t = t0 + pan * nr_ + j;
        y0s[j] = (t / tw_) * m_ - p_.pad_t;
        x0s[j] = (t % tw_) * m_ - p_.pad_l;
      }
      for (int64_t c = c0; c < c1; ++c) {
        const float* src = img + c * h * w;
        for (int64_t j = 0; j < nr_; ++j) {
          float* dj = d + j;
          if (j >= ncols) {
            for (int64_t xi = 0; xi < a2_; ++xi) dj[xi * nr_] = 0.f;
            continue;
          }
          const int64_t y0 = y0s[j], x0 = x0s[j];
          if (y0 >= 0 && x0 >= 0 && y0 + alpha_ <= h && x0 + alpha_ <= w) {
            const float* s0 = src + y0 * w + x0;
            for (int r = 0; r < alpha_; ++r)
              for (int s = 0; s < alpha_; ++s) dj[(r * alpha_ + s) * nr_] = s0[r * w + s];
          } else {
            for (int r = 0; r < alpha_; ++r)
              for (int s = 0; s < alpha_; ++s) {
                const int64_t y = y0 + r, x = x0 + s;
                dj[(r * alpha_ + s) * nr_] =
                    (y >= 0 && y < h && x >= 0 && x < w) ? src[y * w + x] : 0.f;
              }
          }
        }
        fn(static_cast<size_t>(nr_), d, static_cast<size_t>(nr_), v + pan * p_.c * nr_ + c * nr_,
           static_cast<size_t>(vs));
      }
    }
  }

  // M[xi][k][tb] (k panels [kp0, kp1)) = U[xi] * V[xi].
  void gemm(int64_t xi, int64_t kp0, int64_t kp1, int64_t nt, const float* v, float* mm) const {
    const int64_t npan = (nt + nr_ - 1) / nr_;
    const float inf = std::numeric_limits<float>::infinity();
    const float* vx = v + xi * p_.c * tb_;
    float* mx = mm + xi * p_.k * tb_;
    for (int64_t kp = kp0; kp < kp1; ++kp) {
      const float* a = u_.data() + (xi * kp_ + kp) * p_.c * mr_;
      const size_t rows = static_cast<size_t>(std::min(mr_, p_.k - kp * mr_));
      for (int64_t pan = 0; pan < npan; ++pan)
        gemm_->fn(rows, static_cast<size_t>(nr_), static_cast<size_t>(p_.c), a,
                  vx + pan * p_.c * nr_, b_off_.data(), mx + kp * mr_ * tb_ + pan * nr_,
                  static_cast<size_t>(tb_), nullptr, false, -inf, inf);
    }
  }

  // Output channels [k0, k1) of tiles [t0, t0 + nt) -> out (one image).
  void transform_output(int64_t t0, int64_t nt, int64_t k0, int64_t k1, const float* mm, float* out,
                        const float* res, float* o) const {
    const Epilogue& e = p_.epilogue;
    const bool fuse_clamp = e.is_clamp() && !res;
    const float inf = std::numeric_limits<float>::infinity();
    const float lo = fuse_clamp ? e.clamp_min() : -inf, hi = fuse_clamp ? e.clamp_max() : inf;
    const float rlo = e.is_clamp() ? e.clamp_min() : -inf, rhi = e.is_clamp() ? e.clamp_max() : inf;
    const bool act_after = !e.is_clamp();
    const int64_t oh = p_.oh(), ow = p_.ow(), npan = (nt + nr_ - 1) / nr_;
    const auto fn = wino_->output(m_);
    const size_t ms = static_cast<size_t>(p_.k * tb_);
    for (int64_t k = k0; k < k1; ++k) {
      float* plane = out + k * oh * ow;
      const float* rplane = res ? res + k * oh * ow : nullptr;
      for (int64_t pan = 0; pan < npan; ++pan) {
        const int64_t ncols = std::min(nr_, nt - pan * nr_);
        fn(static_cast<size_t>(ncols), mm + k * tb_ + pan * nr_, ms, o, static_cast<size_t>(nr_),
           bias_[k], lo, hi);
        for (int64_t j = 0; j < ncols; ++j) {
          const int64_t t = t0 + pan * nr_ + j;
          const int64_t y0 = (t / tw_) * m_, x0 = (t % tw_) * m_;
          const int64_t rows = std::min<int64_t>(m_, oh - y0),
                        cols = std::min<int64_t>(m_, ow - x0);
          for (int64_t i = 0; i < rows; ++i) {
            float* dst = plane + (y0 + i) * ow + x0;
            const float* src = o + i * m_ * nr_ + j;
            if (rplane) {
              const float* r = rplane + (y0 + i) * ow + x0;
              for (int64_t jj = 0; jj < cols; ++jj) {
                float y = src[jj * nr_] + r[jj];
                y = y < rlo ? rlo : y;
                dst[jj] = y > rhi ? rhi : y;
              }
            } else {
              for (int64_t jj = 0; jj < cols; ++jj) dst[jj] = src[jj * nr_];
            }
            if (act_after) apply_epilogue(isa_, e, static_cast<size_t>(cols), dst, 0.f, nullptr);
          }
        }
      }
    }
  }

  ConvProblem p_;
  Isa isa_;
  int m_ = 4, alpha_ = 6;
  int64_t a2_ = 36;
  const ukernel::F32GemmUkernel* gemm_ = nullptr;
  const ukernel::F32WinoUkernel* wino_ = nullptr;
  int64_t mr_ = 0, nr_ = 0, parallel_ = 0;
  int64_t th_ = 0, tw_ = 0, tiles_ = 0, tb_ = 0, nblk_ = 0, kp_ = 0;
  AlignedVector<float> u_, bias_;
  std::vector<int64_t> b_off_;
};

class WinogradConv final : public ConvAlgorithm {
 public:
  std::string_view name() const override { return "winograd"; }

  bool supports(const ConvProblem& p) const override {
    return p.kh == 3 && p.kw == 3 && p.stride_h == 1 && p.stride_w == 1 && p.dil_h == 1 &&
           p.dil_w == 1 && p.groups == 1;
  }

  KnobSpace knob_space(const ConvProblem& p, Isa isa) const override {
    KnobSpace s;
    s.knobs.push_back({"variant", {4, 2}, "output tile m of F(m x m, 3x3): 4 (fewer MACs) or 2"});
    std::vector<int64_t> uk;
    for (size_t i = 0; i < ukernel::f32_gemm_ukernels_for(isa).size(); ++i)
      uk.push_back(static_cast<int64_t>(i));
    s.knobs.push_back({"ukernel", uk, "index into f32_gemm_ukernels_for(isa) for the GEMMs"});
    s.knobs.push_back({"tile_block", tile_block_values(p),
                       "tiles per pass (rounded up to the kernel's NR): V and M stay in L2"});
    s.knobs.push_back({"parallel",
                       {kParallelTiles, kParallelChannels},
                       "0: threads take whole tile blocks; 1: threads split each block's C/K"});
    return s;
  }

  Knobs default_knobs(const ConvProblem& p, Isa isa) const override {
    const int64_t m = std::min(p.oh(), p.ow()) >= 8 ? 4 : 2;
    const int64_t a2 = (m + 2) * (m + 2);
    const int64_t per_tile = a2 * (p.c + p.k) * static_cast<int64_t>(sizeof(float));
    int64_t tb = 0;
    for (int64_t b : tile_block_values(p))
      if (tb == 0 || b * per_tile <= kBlockBytes) tb = b;
    // Threads take whole tile blocks only when there are many tiles: with few (<= 16 per
    // image, up to 16x16 outputs at F(4,3)) every thread would stream all of U (the
    // transformed weights, MBs on deep layers) for a slice of the tiles, and splitting
    // C and K of shared blocks is 1.8-2.2x faster at 2 threads (interleaved
    // DLAS_BENCH_KNOBS=parallel=0|1 dlas_bench_conv, zoo layers; equal from 49 tiles).
    const int64_t tiles = p.n * tiles_of(p, m);
    // Whole tile blocks per thread need at least two blocks: narrow layers (few channels,
    // e.g. channel-pruned: c64 k28 32x32 fits all 64 tiles in one 1 MiB block) otherwise
    // ran on one thread (0.335 vs 0.173 ms at 2 threads, vgg16-cifar cp:0.8 features.3).
    while (tiles >= 32 && tb > kTileBlocks[0] && tiles < 2 * tb) tb /= 2;
    return {{"variant", m},
            {"ukernel", 0},
            {"tile_block", tb},
            {"parallel", tiles >= 32 ? kParallelTiles : kParallelChannels}};
  }

  std::unique_ptr<PreparedConv> prepare(const ConvProblem& p, const ConvWeights& view,
                                        const Knobs& knobs, Isa isa) const override {
    const float* weights = view.f32_data();
    const float* bias = view.bias;
    p.validate();
    DLAS_CHECK(supports(p), ErrorKind::kUnsupported, "winograd does not support ", p.key(),
               " (3x3 stride 1 dilation 1 groups 1 only)");
    knob_space(p, isa).validate(knobs, "winograd");
    return std::make_unique<PreparedWinograd>(p, weights, bias, knobs, isa);
  }
};

}  // namespace

const ConvAlgorithm& winograd_conv_algorithm() {
  static const WinogradConv algo;
  return algo;
}

}  // namespace dlas

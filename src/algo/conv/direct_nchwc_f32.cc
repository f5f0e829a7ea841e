// direct on blocked layouts (nchw8c / nchw16c, dlas/algo/layout.h): the output is cut into
// tiles of `pw` pixels along a row (or, on planes 2, 4, 7 or 8 wide, of `ph` whole rows)
// x `nv` output-channel blocks, each held in registers by
// the f32-nchwc microkernels while the reduction runs over every input channel and tap --
// per step one weight vector per block and one broadcast per pixel, no im2col. A 1x1
// stride-1 unpadded conv is a blocked GEMM: its rows are one run of H*W pixels.
//
//   prepare: weights packed per group of nv blocks as [C blocks][KH][KW][in lanes][nv][B]
//            (zero past C and K), bias padded to whole blocks.
//   run, per image: a padded input (padding > 0) is copied into the workspace with the
//            borders zeroed; then threads split the (block group, output row, run of
//            tiles) items, rows outermost or block groups outermost (split_spatially).
// The input may be NCHW when the output is blocked (a stem reading the model's image):
// the kernels then broadcast one channel per step (in lanes = 1).
#include <algorithm>
#include <cstring>
#include <limits>
#include <memory>
#include <vector>

#include "algo/conv/conv_impl.h"
#include "algo/conv/direct_nchwc_f32.h"
#include "algo/microkernels/f32-nchwc/f32_nchwc.h"
#include "dlas/algo/conv.h"
#include "dlas/core/aligned_vector.h"
#include "dlas/core/error.h"
#include "dlas/hw/cpu.h"
#include "dlas/hw/thread_pool.h"

namespace dlas {
namespace {

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// Floats stored before a non-fused activation runs over them (8 KiB: in L1).
constexpr int64_t kActivateFloats = 2048;

// Pixel counts the `pw` knob offers (each capped at the tile's register budget).
constexpr const auto& kPixelChoices = kBlockedTilePixels;

bool flat_1x1(const ConvProblem& p) { return blocked_flat_1x1(p); }

// Whether tiles of whole rows (the `ph` knob) apply: a blocked input, several rows of a
// width the row kernels have (nchwc_row_cols), not a flat 1x1 (one long row already).
bool row_tiles(const ConvProblem& p) {
  return !flat_1x1(p) && is_blocked(p.x_layout) && p.oh() >= 2 &&
         p.ow() <= ukernel::kNchwcMaxRowCols && ukernel::nchwc_row_cols(static_cast<int>(p.ow()));
}

// Weights that stream: on a plane of at most kStreamPixels output pixels each weight vector
// serves one to four tiles, so a layer whose packed weights pass the L2 reads them from
// memory at every run (inside a model whose weights pass the last-level cache). The
// kernels then prefetch each tap's weights kWeightPrefetchFloats ahead; the hardware
// prefetchers alone left the FMAs waiting. Measured with weights cold (DLAS_BENCH_COLD=1
// build/dlas_bench_conv, 2 threads, AMD EPYC Zen 5): 512->512 3x3 at 4x4 440 -> 224 us,
// at 2x2 163 -> 106 us, 1024->1024 1x1 at 2x2 99 -> 51 us; 2, 4, 8, 16 and 32 KiB ahead
// took 284, 241, 208, 202 and 199 us on the first. On 14x14 and larger planes, whose weights stay
// in cache across a block group's tiles, the prefetches cost 5-12%, so they are off there.
constexpr int64_t kStreamPixels = 64;
constexpr int64_t kWeightPrefetchFloats = 4096;

// Rows per tile the `ph` knob offers (each capped at the register budget of nv and at oh).
constexpr int64_t kRowChoices[] = {1, 2, 3, 4};
static_assert(kRowChoices[3] == ukernel::kNchwcMaxRows);

class PreparedDirectNchwc final : public PreparedF32Conv {
 public:
  PreparedDirectNchwc(const ConvProblem& p, const float* w, const float* bias, const Knobs& kn,
                      Isa isa, const ukernel::F32NchwcUkernels& set)
      : p_(p), isa_(isa) {
    b_ = layout_block(p.y_layout);
    ib_ = is_blocked(p.x_layout) ? b_ : 1;
    cbx_ = ib_ == 1 ? p.c : ceil_div(p.c, b_);
    ocb_ = ceil_div(p.k, b_);
    // Grouped convs reduce over their group's input blocks only; a block group never spans
    // two conv groups. Groups narrower than a block (supports(): several whole groups per
    // block, as many in as out) run as one group per block: output block j reads input
    // block j, whose lanes of other groups meet zero weights.
    const int64_t cg = blocked_conv_groups(p, b_), ocb_g = ocb_ / cg, cbx_g = cbx_ / cg;
    nv_ = std::min<int64_t>(kn.at("nv"), ocb_g);
    const BlockedRowGeometry geo(p);
    oh_ = geo.oh, ow_ = geo.ow, rows_ = geo.rows, cols_ = geo.cols, hp_ = geo.hp, wp_ = geo.wp;
    flat_ = geo.flat, padded_ = geo.padded;
    cbg_ = cbx_g;
    for (int64_t g = 0; g < cg; ++g)
      for (int64_t j = 0; j < ocb_g; j += nv_)
        bgroups_.push_back({g * ocb_g + j, std::min(nv_, ocb_g - j), g * cbx_g, 0});
    groups_ = static_cast<int64_t>(bgroups_.size());
    const int stride = flat_ ? 1 : static_cast<int>(p.stride_w);
    pw_ = std::min<int64_t>(kn.at("pw"), set.max_pixels(static_cast<int>(nv_)));
    pw_ = std::min(pw_, cols_);
    // Tiles of ph whole rows: as many rows as the knob asks, oh holds and a kernel has (the
    // registers fit, nv within kNchwcMaxRowBlocks).
    auto it = kn.find("ph");
    ph_ = it != kn.end() && row_tiles(p) ? std::min(it->second, oh_) : 1;
    while (ph_ > 1 && !set.select(static_cast<int>(nv_), static_cast<int>(ow_),
                                  static_cast<int>(ib_), stride, static_cast<int>(ph_)))
      --ph_;
    if (ph_ > 1) pw_ = ow_, rows_ = ceil_div(oh_, ph_);
    tiles_ = ceil_div(cols_, pw_);
    // One kernel per (block count, pixel count) the tiles need: full groups and the last;
    // with row tiles, per (block count, rows): full row groups and the last.
    for (int nv = 1; nv <= 4; ++nv) {
      for (int px = 1; px <= pw_; ++px)
        kernels_[nv - 1][px - 1] = set.select(nv, px, static_cast<int>(ib_), stride, 1);
      for (int rh = 2; rh <= ph_; ++rh)
        row_kernels_[nv - 1][rh - 2] =
            set.select(nv, static_cast<int>(ow_), static_cast<int>(ib_), stride, rh);
    }
    for (const BlockGroup& bg : bgroups_) {
      const int64_t last = cols_ - (tiles_ - 1) * pw_;
      DLAS_CHECK(kernel(bg.blocks, pw_) && kernel(bg.blocks, last), ErrorKind::kInternal,
                 "direct (blocked): no kernel for ", bg.blocks, " blocks x ", pw_, " pixels");
      DLAS_CHECK(ph_ == 1 ||
                     (row_kernel(bg.blocks, ph_) && row_kernel(bg.blocks, oh_ - (rows_ - 1) * ph_)),
                 ErrorKind::kInternal, "direct (blocked): no kernel for ", bg.blocks, " blocks x ",
                 ph_, " rows of ", ow_, " pixels");
    }
    // Weights: per block group [cbg][kh][kw][ib][blocks][b]; an input channel outside the
    // output channel's conv group (or past C or K) holds zero.
    const int64_t taps = p.kh * p.kw, cpg = p.c / p.groups, kpg = p.k / p.groups;
    int64_t offset = 0;
    for (BlockGroup& bg : bgroups_)
      bg.w_offset = offset, offset += cbg_ * taps * ib_ * bg.blocks * b_;
    w_.assign(static_cast<size_t>(offset), 0.f);
    for (const BlockGroup& bg : bgroups_) {
      float* wg = w_.data() + bg.w_offset;
      const int64_t ic0 = bg.x_block * ib_;  // the first input channel the tiles read
      for (int64_t cb = 0; cb < cbg_; ++cb)
        for (int64_t t = 0; t < taps; ++t)
          for (int64_t c = 0; c < ib_; ++c)
            for (int64_t v = 0; v < bg.blocks; ++v)
              for (int64_t l = 0; l < b_; ++l) {
                const int64_t oc = (bg.first_block + v) * b_ + l, ic = ic0 + cb * ib_ + c;
                const int64_t local = ic - oc / kpg * cpg;  // within oc's conv group
                if (oc < p.k && ic < p.c && local >= 0 && local < cpg)
                  wg[(((cb * taps + t) * ib_ + c) * bg.blocks + v) * b_ + l] =
                      w[(oc * cpg + local) * taps + t];
              }
    }
    bias_.assign(static_cast<size_t>(ocb_ * b_), 0.f);
    if (bias) std::copy(bias, bias + p.k, bias_.begin());
    // A 1x1 conv whose input channels end half way into a block (24 or 40 on 16 lanes:
    // mobilenetv2's and efficientnetb0's bottlenecks) skips the padding's lane steps, a
    // third of the FMAs at 24.
    half_last_ = p.kh == 1 && p.kw == 1 && p.groups == 1 && ib_ == b_ && p.c % b_ == b_ / 2;
    const uint64_t l2 = cpu_info().l2_bytes ? cpu_info().l2_bytes : uint64_t{1} << 20;
    if (oh_ * ow_ <= kStreamPixels && sizeof(float) * w_.size() > l2) w_pf_ = kWeightPrefetchFloats;
    spatial_ = split_spatially(
        oh_ * ow_,
        static_cast<int64_t>(sizeof(float)) * (cbx_ * ib_ * p.h * p.w + ocb_ * b_ * oh_ * ow_),
        static_cast<int64_t>(sizeof(float) * w_.size()));
  }

  size_t workspace_bytes(int) const override {
    return padded_ ? sizeof(float) * static_cast<size_t>(cbx_ * hp_ * wp_ * ib_) : 0;
  }
  size_t packed_bytes() const override { return (w_.size() + bias_.size()) * sizeof(float); }

  void run_typed(const float* in, float* out, const float* residual, void* workspace,
                 ThreadPool& pool) const override {
    const int64_t in_img = (ib_ == 1 ? p_.c : cbx_ * b_) * p_.h * p_.w;
    const int64_t out_img = ocb_ * b_ * oh_ * ow_;
    const Epilogue& e = p_.epilogue;
    ukernel::F32NchwcArgs base;
    base.cb = static_cast<size_t>(cbg_);
    base.kh = static_cast<size_t>(p_.kh), base.kw = static_cast<size_t>(p_.kw);
    base.x_cbs = static_cast<size_t>(hp_ * wp_ * ib_);
    base.x_khs = static_cast<size_t>(p_.dil_h * wp_ * ib_);
    base.x_kws = static_cast<size_t>(p_.dil_w * ib_);
    base.y_cbs = static_cast<size_t>(oh_ * ow_ * b_);
    base.lo = e.clamp_min(), base.hi = e.clamp_max();
    base.w_pf = static_cast<size_t>(w_pf_);
    base.half_last = half_last_;
    const int64_t sh = flat_ ? 1 : p_.stride_h, sw = flat_ ? 1 : p_.stride_w;
    for (int64_t img = 0; img < p_.n; ++img) {
      const float* x = in + img * in_img;
      if (padded_) {
        pad_blocked_image(x, static_cast<float*>(workspace), cbx_, ib_, p_.h, p_.w, hp_, wp_,
                          p_.pad_t, p_.pad_l, pool);
        x = static_cast<const float*>(workspace);
      }
      float* y = out + img * out_img;
      const float* r = residual ? residual + img * out_img : nullptr;
      if (ph_ > 1) {
        run_row_tiles(base, x, y, r, pool);
        continue;
      }
      for_each_tile_run(
          pool, groups_, rows_, tiles_, spatial_,
          [&](int64_t g, int64_t row, int64_t t0, int64_t t1) {
            const BlockGroup& bg = bgroups_[static_cast<size_t>(g)];
            const int64_t nvg = bg.blocks;
            ukernel::F32NchwcArgs a = base;
            a.bias = bias_.data() + bg.first_block * b_;
            const int64_t y0 = bg.first_block * oh_ * ow_ * b_ + row * cols_ * b_;
            const float* xg = x + bg.x_block * hp_ * wp_ * ib_;
            // An activation the kernels do not fuse runs over each block's run of stored
            // pixels, a few KiB at a time while they are still in L1 (once per tile, its
            // call cost made SiLU dearer than the conv on efficientnetb0's expansions).
            int64_t pending = t0 * pw_;
            auto activate = [&](int64_t c1) {
              const Epilogue act{e.act, e.p0, e.p1, false};
              for (int64_t v = 0; v < nvg; ++v)
                apply_epilogue(isa_, act, static_cast<size_t>((c1 - pending) * b_),
                               y + y0 + pending * b_ + v * oh_ * ow_ * b_, 0.f, nullptr);
              pending = c1;
            };
            // Runs of full tiles in one kernel call each (as many as fill kActivateFloats when
            // an activation follows), the row's last, narrower tile in a call of its own.
            const int64_t run =
                e.is_clamp() ? t1 - t0 : std::max<int64_t>(1, kActivateFloats / (pw_ * nvg * b_));
            for_each_tile_call(t0, t1, cols_, pw_, run, [&](int64_t c0, int64_t n, int64_t px) {
              const int64_t y_off = y0 + c0 * b_;
              a.r = r ? r + y_off : nullptr;
              a.tiles = static_cast<size_t>(n);
              const float* xt = xg + ((row * sh) * wp_ + c0 * sw) * ib_;
              kernel(nvg, px)(a, xt, w_.data() + bg.w_offset, y + y_off);
              if (!e.is_clamp()) activate(std::min(cols_, c0 + n * pw_));
            });
          });
    }
  }

 private:
  ukernel::F32NchwcFn kernel(int64_t nv, int64_t px) const { return kernels_[nv - 1][px - 1]; }
  // The kernel of nv blocks x rh whole rows (rh = 1: the one-row kernel of ow pixels).
  ukernel::F32NchwcFn row_kernel(int64_t nv, int64_t rh) const {
    return rh == 1 ? kernel(nv, ow_) : row_kernels_[nv - 1][rh - 2];
  }

  // Tiles of ph whole rows: one call per (block group, row group), so a tile's weights are
  // read once per ph rows.
  void run_row_tiles(const ukernel::F32NchwcArgs& base, const float* x, float* y, const float* r,
                     ThreadPool& pool) const {
    const Epilogue& e = p_.epilogue;
    pool.parallel_for(static_cast<size_t>(groups_ * rows_), [&](size_t item) {
      const int64_t i = static_cast<int64_t>(item);
      const BlockGroup& bg = bgroups_[static_cast<size_t>(spatial_ ? i % groups_ : i / rows_)];
      const int64_t oy = (spatial_ ? i / groups_ : i % rows_) * ph_, rh = std::min(ph_, oh_ - oy);
      ukernel::F32NchwcArgs a = base;
      a.bias = bias_.data() + bg.first_block * b_;
      a.x_rs = static_cast<size_t>(p_.stride_h * wp_ * ib_);
      a.y_rs = static_cast<size_t>(ow_ * b_);
      const int64_t y_off = (bg.first_block * oh_ + oy) * ow_ * b_;
      a.r = r ? r + y_off : nullptr;
      const float* xt = x + (bg.x_block * hp_ + oy * p_.stride_h) * wp_ * ib_;
      row_kernel(bg.blocks, rh)(a, xt, w_.data() + bg.w_offset, y + y_off);
      if (!e.is_clamp()) {
        const Epilogue act{e.act, e.p0, e.p1, false};
        for (int64_t v = 0; v < bg.blocks; ++v)
          apply_epilogue(isa_, act, static_cast<size_t>(rh * ow_ * b_),
                         y + y_off + v * oh_ * ow_ * b_, 0.f, nullptr);
      }
    });
  }

  ConvProblem p_;
  Isa isa_;
  int64_t b_ = 16, ib_ = 16, cbx_ = 0, ocb_ = 0, nv_ = 1, pw_ = 1, oh_ = 0, ow_ = 0;
  int64_t rows_ = 0, cols_ = 0, hp_ = 0, wp_ = 0, groups_ = 0, tiles_ = 0, ph_ = 1;
  int64_t w_pf_ = 0;        // weights prefetched this many floats ahead (0: none)
  bool half_last_ = false;  // F32NchwcArgs::half_last
  bool flat_ = false, padded_ = false, spatial_ = false;
  ukernel::F32NchwcFn kernels_[4][ukernel::kNchwcMaxPixels] = {};
  ukernel::F32NchwcFn row_kernels_[4][ukernel::kNchwcMaxRows - 1] = {};
  // The output-block groups one tile covers: first output block, blocks, the conv group's
  // first input block, and the offset of their packed weights.
  struct BlockGroup {
    int64_t first_block, blocks, x_block, w_offset;
  };
  std::vector<BlockGroup> bgroups_;
  int64_t cbg_ = 0;  // input blocks (NCHW input: channels) a tile reduces over
  AlignedVector<float> w_, bias_;
};

class DirectNchwcConv final : public ConvAlgorithm {
 public:
  std::string_view name() const override { return "direct"; }

  // f32 convs with a blocked output, dense (groups 1) or grouped on a blocked input: with
  // whole blocks per group, or with groups of kMinSubBlockGroup or more channels that divide
  // a block, as many in as out (regnet's and resnext's group widths of 4 and 8 on 16
  // lanes), each block then reduced as one group with zeros between its groups; stride
  // along W of 1 or 2 (the kernels' constant pixel steps).
  bool supports(const ConvProblem& p) const override {
    const bool grouped_ok =
        p.groups == 1 ||
        (p.x_layout == p.y_layout && blocked_groups_supported(p, layout_block(p.y_layout)));
    return p.types() == ConvTypes::kF32 && is_blocked(p.y_layout) && grouped_ok &&
           (p.x_layout == p.y_layout || p.x_layout == Layout::kNchw) &&
           (flat_1x1(p) || p.stride_w <= 2);
  }

  KnobSpace knob_space(const ConvProblem& p, Isa) const override {
    KnobSpace s;
    const int64_t ocb = blocks_per_group(p);
    std::vector<int64_t> nv;
    for (int v : ukernel::kNchwcBlocks)
      if (v <= ocb) nv.push_back(v);
    s.knobs.push_back({"nv", nv, "output-channel blocks per register tile"});
    s.knobs.push_back({"pw",
                       std::vector<int64_t>(std::begin(kPixelChoices), std::end(kPixelChoices)),
                       "output pixels per register tile (capped by the register budget of nv)"});
    if (row_tiles(p))
      s.knobs.push_back({"ph", std::vector<int64_t>(std::begin(kRowChoices), std::end(kRowChoices)),
                         "whole output rows per register tile (1: tiles of pw pixels along a "
                         "row; capped by the register budget of nv and by the rows)"});
    return s;
  }

  // A class's pw on a row of another length: the same number of tiles, spread evenly (the
  // narrowest knob value at least cols / tiles). pw = 8, chosen on a 64-pixel plane, left
  // a 7x7 1x1's 49-pixel row six tiles of 8 and one of 1; now seven of 7. Row tiles
  // (ph > 1) and rows no wider than pw are left alone.
  static Knobs spread_pixels(const ConvProblem& p, const ukernel::F32NchwcUkernels& set,
                             Knobs knobs) {
    auto nv_it = knobs.find("nv"), pw_it = knobs.find("pw"), ph_it = knobs.find("ph");
    if (nv_it == knobs.end() || pw_it == knobs.end() || (ph_it != knobs.end() && ph_it->second > 1))
      return knobs;
    const int64_t cols = flat_1x1(p) ? p.oh() * p.ow() : p.ow();
    // The pixels a tile runs: the knob within nv's registers (as the kernel caps it).
    const int64_t nv = std::min(nv_it->second, blocks_per_group(p));
    const int64_t pw = std::min<int64_t>(pw_it->second, set.max_pixels(static_cast<int>(nv)));
    if (cols <= pw) return knobs;
    const int64_t px = ceil_div(cols, ceil_div(cols, pw));
    for (int64_t v : kPixelChoices)
      if (v >= px) {
        pw_it->second = std::min(v, pw);
        break;
      }
    return knobs;
  }

  // A class's nv and pw on a layer whose output blocks nv does not divide: the last block
  // group would run fewer blocks with the same pixels (24 channels on 8 lanes at nv = 2:
  // groups of 2 and 1 block, the second tile 4 accumulators, waiting on the FMA latency),
  // where that tile holds fewer than 8 accumulators.
  // Blocks per tile become a divisor of the layer's blocks, from 2 up: more than nv at the
  // same pw, or fewer with pw raised to keep nv * pw accumulators (within the registers,
  // the pw choices and the row); among those whose tile keeps at least 3/4 of nv * pw
  // accumulators, the most blocks. Row tiles (ph > 1) are left alone. (mobilenetv2-cifar's
  // 144 -> 24 32x32 layer on the AVX2 path, AMD EPYC Zen 5 with the AVX2 table, 1 thread:
  // nv = 2, pw = 4 77 us, nv = 3, pw = 4 56 us.)
  Knobs fit_class_knobs(const ConvProblem& p, Isa isa, Knobs knobs) const override {
    const ukernel::F32NchwcUkernels* set = kernels_for(p, isa);
    auto nv_it = knobs.find("nv"), pw_it = knobs.find("pw"), ph_it = knobs.find("ph");
    if (!set || nv_it == knobs.end() || pw_it == knobs.end() ||
        (ph_it != knobs.end() && ph_it->second > 1))
      return knobs;
    const int64_t ocb = blocks_per_group(p), nv = nv_it->second;
    const int64_t cols = flat_1x1(p) ? p.oh() * p.ow() : p.ow();
    const int64_t pw = std::min(pw_it->second, cols);
    // Only where the last group's tile holds fewer than 8 accumulators: two FMA pipes of
    // 4 cycles' latency need 8 in flight.
    if (nv >= ocb || ocb % nv == 0 || (ocb % nv) * pw >= 8) return spread_pixels(p, *set, knobs);
    int64_t best_v = 0, best_pw = 0;
    for (int v : ukernel::kNchwcBlocks) {
      if (v < 2 || v > ocb || ocb % v != 0) continue;
      // More blocks: the class's pw (as the registers allow); fewer: pw raised.
      const int64_t want = v > nv ? pw : nv * pw / v;
      const int64_t cap = std::min<int64_t>({want, set->max_pixels(v), cols});
      int64_t q = 0;
      for (int64_t c : kPixelChoices)
        if (c <= cap) q = c;
      if (q == 0 || 4 * v * q < 3 * nv * pw) continue;
      best_v = v, best_pw = q;
    }
    if (best_v != 0) nv_it->second = best_v, pw_it->second = best_pw;
    return spread_pixels(p, *set, knobs);
  }

  // The survey's points where tiles run along one row (flat 1x1 convs, rows wider than the
  // row tiles take): the default, then per block count (4, 3, 2, 1) the widest tile its
  // register budget holds, pixels spread evenly over the row. (Planes of whole-row tiles
  // keep the generic spread over nv x pw x ph.) The default's
  // FMAs-per-load model takes 4-block tiles on every 1x1 conv of 4x4 to 8x8 planes, where
  // 2-block tiles of 8 or 10 pixels ran up to 29% faster, 7% in the geometric mean over the
  // mobile models' and resnet50's 30 such layers (build/dlas_bench_conv, weights warm, AMD
  // EPYC Zen 5, 2 threads): which tile family wins is the machine's to measure.
  std::vector<Knobs> survey_knobs(const ConvProblem& p, Isa isa, int extra) const override {
    const ukernel::F32NchwcUkernels* set = kernels_for(p, isa);
    if (!set || row_tiles(p)) return ConvAlgorithm::survey_knobs(p, isa, extra);
    std::vector<Knobs> out{default_knobs(p, isa)};
    const int64_t ocb = blocks_per_group(p);
    const int64_t cols = flat_1x1(p) ? p.oh() * p.ow() : p.ow();
    for (size_t i = std::size(ukernel::kNchwcBlocks); i-- > 0;) {
      const int nv = ukernel::kNchwcBlocks[i];
      if (nv > ocb) continue;
      if (static_cast<int>(out.size()) > extra) break;
      const int64_t cap = std::min(set->max_pixels(nv), set->default_accumulators / nv);
      if (cap < 1) continue;
      Knobs k{{"nv", nv}, {"pw", even_tile_pixels(cols, cap)}};
      if (std::find(out.begin(), out.end(), k) == out.end()) out.push_back(std::move(k));
    }
    return out;
  }

  // The tile with the most FMAs per load (nv * pw / (nv + pw)) among the register budgets,
  // pixels spread evenly over a row's tiles. On planes 2, 4, 7 or 8 wide a tile of whole
  // rows (ph > 1) replaces it where tile_rate() expects more than 5% more FMAs per cycle.
  Knobs default_knobs(const ConvProblem& p, Isa isa) const override {
    const ukernel::F32NchwcUkernels* set = kernels_for(p, isa);
    // Within the register file and the set's measured default budget.
    auto max_pixels = [&](int nv) {
      return set ? std::min(set->max_pixels(nv), set->default_accumulators / nv) : 8 / nv;
    };
    const int64_t ocb = blocks_per_group(p);
    const int64_t cols = flat_1x1(p) ? p.oh() * p.ow() : p.ow();
    const auto [best_nv, pw] = most_fmas_per_load(
        ocb, cols, ukernel::kNchwcBlocks[std::size(ukernel::kNchwcBlocks) - 1], max_pixels);
    Knobs k{{"nv", best_nv}, {"pw", pw}};
    if (!row_tiles(p)) return k;
    k["ph"] = 1;
    if (!set) return k;
    double rate = tile_rate(p, *set, best_nv, std::min(pw, p.ow()), 1);
    for (int nv : ukernel::kNchwcBlocks)
      for (int64_t ph : kRowChoices) {
        if (nv > ocb || ph < 2 || ph > p.oh() || nv * ph * p.ow() > set->default_accumulators ||
            !set->select(nv, static_cast<int>(p.ow()), set->lanes, static_cast<int>(p.stride_w),
                         static_cast<int>(ph)))
          continue;
        const double r = tile_rate(p, *set, nv, p.ow(), ph);
        if (r > 1.05 * rate) rate = r, k = {{"nv", nv}, {"pw", pw}, {"ph", ph}};
      }
    return k;
  }

  // A throughput model of the tiles' inner loop: vector FMAs per cycle over the layer, for
  // tiles of nv blocks x pw pixels (ph = 1) or ph whole rows. Per lane step a tile of v
  // blocks and n pixels issues v * n FMAs and v + n loads (two of each a cycle), and when
  // its block group's packed weights overflow L1 (32 KiB) it streams v weight vectors from
  // L2 at the set's measured l2_bytes_per_cycle. The model's one use: deciding whether
  // whole-row tiles beat one-row tiles on small planes, where the weights, read once per
  // tile, are the stream.
  static double tile_rate(const ConvProblem& p, const ukernel::F32NchwcUkernels& set, int nv,
                          int64_t pw, int64_t ph) {
    const double l2_bytes = set.l2_bytes_per_cycle;
    const int64_t ocb = blocks_per_group(p), oh = p.oh(), ow = p.ow();
    const int64_t cbg = ceil_div(p.c / std::max<int64_t>(p.groups, 1), set.lanes);
    const double vec_bytes = 4.0 * set.lanes;
    auto cycles = [&](int64_t v, int64_t n) {
      const bool streamed =
          static_cast<double>(cbg * p.kh * p.kw * set.lanes * v) * vec_bytes > 32.0 * 1024;
      return std::max({static_cast<double>(v * n) / 2.0, static_cast<double>(v + n) / 2.0,
                       streamed ? static_cast<double>(v) * vec_bytes / l2_bytes : 0.0});
    };
    // Tiles per row group (ph > 1: one of ph rows, the last of the remaining rows).
    std::vector<std::pair<int64_t, int64_t>> tiles;  // (pixels, count) per block group
    if (ph > 1) {
      tiles.push_back({ph * ow, oh / ph});
      if (oh % ph) tiles.push_back({oh % ph * ow, 1});
    } else {
      tiles.push_back({pw, oh * (ow / pw)});
      if (ow % pw) tiles.push_back({ow % pw, oh});
    }
    double total = 0;
    for (int64_t g = 0; g < ocb; g += nv) {
      const int64_t v = std::min<int64_t>(nv, ocb - g);
      for (const auto& [n, count] : tiles) total += static_cast<double>(count) * cycles(v, n);
    }
    return static_cast<double>(ocb * oh * ow) / total;
  }

  std::unique_ptr<PreparedConv> prepare(const ConvProblem& p, const ConvWeights& weights,
                                        const Knobs& knobs, Isa isa) const override {
    DLAS_CHECK(supports(p), ErrorKind::kUnsupported, "direct (blocked) does not support ", p.key());
    const ukernel::F32NchwcUkernels* set = kernels_for(p, isa);
    DLAS_CHECK(set != nullptr, ErrorKind::kUnsupported, "layout ", layout_name(p.y_layout),
               " needs vectors of ", layout_block(p.y_layout), " floats, which the ", isa_name(isa),
               " path lacks");
    knob_space(p, isa).validate(knobs, "direct");
    return std::make_unique<PreparedDirectNchwc>(p, weights.f32_data(), weights.bias, knobs, isa,
                                                 *set);
  }

 private:
  static const ukernel::F32NchwcUkernels* kernels_for(const ConvProblem& p, Isa isa) {
    return ukernel::f32_nchwc_for(isa, static_cast<int>(layout_block(p.y_layout)));
  }
  // Output-channel blocks of one conv group (a tile's blocks never span two).
  static int64_t blocks_per_group(const ConvProblem& p) {
    return ceil_div(p.k / std::max<int64_t>(p.groups, 1), layout_block(p.y_layout));
  }
};

}  // namespace

std::unique_ptr<PreparedConv> prepare_direct_nchwc(const ConvProblem& p, const ConvWeights& w,
                                                   const Knobs& knobs, Isa isa,
                                                   const ukernel::F32NchwcUkernels& set) {
  const ConvAlgorithm& algo = direct_nchwc_conv_algorithm();
  DLAS_CHECK(algo.supports(p) && set.lanes == layout_block(p.y_layout), ErrorKind::kUnsupported,
             "direct (blocked) with ", set.name, " does not support ", p.key());
  algo.knob_space(p, isa).validate(knobs, "direct");
  return std::make_unique<PreparedDirectNchwc>(p, w.f32_data(), w.bias, knobs, isa, set);
}

const ConvAlgorithm& direct_nchwc_conv_algorithm() {
  static const DirectNchwcConv algo;
  return algo;
}

}  // namespace dlas

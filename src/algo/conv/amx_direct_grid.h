// The geometry the AMX implicit-GEMM `direct` convs share (int8: direct_qs8.cc, bf16:
// direct_h16.cc). Both read their B tiles in place from interleaved padded input planes: one
// uint32 per padded pixel holding a channel group (int8: 4 channels, bf16: 2), so that
// 16 consecutive output pixels under one tap are 16 consecutive uint32, one 64-byte tile row,
// and the 16 groups of a reduction step are tile rows one group plane apart.
//
//   - Strides: the padded input is split into SH x SW phase planes, phase (a, b) holding
//     padded pixel (SH u + a, SW v + b) at u * WQ + v (WQ = ceil(WP / SW)). Tap (ky, kx)
//     then reads phase (ky % SH, kx % SW) at (oy + ky / SH, ox + kx / SW): a stride-1 conv
//     on each phase. Only the phases some tap reads are built (a 1x1 stride-2 conv: one).
//   - Virtual grid: the output is computed on OH rows x WQ pixels; virtual pixel
//     j = oy * WQ + ox reads tap (ky, kx) at phase position j + (ky / SH) * WQ + kx / SW,
//     so 16 consecutive virtual pixels are one tile row whatever the width. The columns
//     ox >= OW are computed and dropped (OW / WQ of the work is real: 94% on 32x32 with
//     padding 1, 67% on 4x4; an unpadded 1x1 conv drops none). A run is 16 virtual pixels;
//     its real ones are consecutive in the NCHW output, and so are those of consecutive runs.
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "algo/conv/conv_impl.h"
#include "algo/conv/gemm_common.h"
#include "dlas/algo/conv.h"
#include "dlas/algo/knobs.h"
#include "dlas/hw/amx.h"

namespace dlas::conv_detail {

// A run of kAmxRun virtual pixels from j0: `mask` its real pixels (bit l: j0 + l), the first
// of them at `out` in the output plane.
inline constexpr int64_t kAmxRun = 16;
struct AmxRun {
  int64_t j0, out;
  uint16_t mask;
};

class AmxDirectGrid {
 public:
  // `groups`: channel groups (uint32 planes) of the interleaved input, a multiple of 16.
  AmxDirectGrid(const ConvProblem& p, int64_t groups) : p_(p), groups_(groups) {
    hp_ = p.h + p.pad_t + p.pad_b, wp_ = p.w + p.pad_l + p.pad_r;
    sh_ = p.stride_h, sw_ = p.stride_w;
    hq_ = div_up(hp_, sh_), wq_ = div_up(wp_, sw_);
    ph_ = std::min(sh_, p.kh), pw_ = std::min(sw_, p.kw);
    const int64_t oh = p.oh(), ow = p.ow();
    for (int64_t j0 = 0; j0 < oh * wq_; j0 += kAmxRun) {
      AmxRun run{j0, -1, 0};
      for (int64_t l = 0; l < kAmxRun; ++l) {
        const int64_t j = j0 + l, oy = j / wq_, ox = j % wq_;
        if (oy >= oh || ox >= ow) continue;
        if (run.out < 0) run.out = oy * ow + ox;
        run.mask = static_cast<uint16_t>(run.mask | 1u << l);
      }
      if (run.mask) runs_.push_back(run);
    }
    // Phase plane stride: the phase, and every group the last run reads under the last tap.
    plane_ = round_up(std::max(hq_ * wq_, runs_.back().j0 + kAmxRun + (p.kh - 1) / sh_ * wq_ +
                                              (p.kw - 1) / sw_ + 1),
                      16);
    group_ = ph_ * pw_ * plane_;
  }

  // The knobs of both AMX implicit GEMMs (32-channel x 32-pixel tiles): order (0: channel
  // panels outer, the weights reused across pixel runs; 1: pixel runs outer, the input rows
  // reused across channel panels) and group (tiles per work item), and their default: 4
  // tiles (128 pixels) per item, unless that leaves a thread of two without work.
  static KnobSpace knob_space() {
    KnobSpace s;
    s.knobs.push_back({"order",
                       {0, 1},
                       "0: output-channel panels outer (weights reused across pixel runs); "
                       "1: pixel runs outer (input rows reused across channel panels)"});
    s.knobs.push_back({"group", {1, 2, 4, 8}, "tiles (32 channels x 32 pixels) per work item"});
    return s;
  }
  static Knobs default_knobs(const ConvProblem& p) {
    int64_t group = 4;
    const int64_t pixel_pairs = div_up(div_up(virtual_pixels(p), kAmxRun), 2);
    while (group > 1 && div_up(p.k, 32) * div_up(pixel_pairs, group) < 2 * kItemsPerThread / 4)
      group /= 2;
    return {{"order", 0}, {"group", group}};
  }

  const std::vector<AmxRun>& runs() const { return runs_; }
  // Virtual pixels of the grid (for work splitting before a plan exists).
  static int64_t virtual_pixels(const ConvProblem& p) {
    return p.oh() * div_up(p.w + p.pad_l + p.pad_r, p.stride_w);
  }
  // uint32 per channel group (its phase planes), and of the whole interleaved input.
  int64_t group_stride() const { return group_; }
  int64_t input_words() const { return groups_ * group_; }
  // uint32 of one padded row of scratch (interleave's `row`).
  int64_t row_words() const { return wp_; }
  // Where reduction step (16-group block b, tap (ky, kx)) starts for virtual pixel 0, in
  // uint32 from group 0.
  int64_t tap_offset(int64_t b, int64_t ky, int64_t kx) const {
    return b * 16 * group_ + (ky % sh_ * pw_ + kx % sw_) * plane_ + ky / sh_ * wq_ + kx / sw_;
  }
  // The step offsets of every (tap, 16-group block), tap-major: what the kernels walk.
  std::vector<int64_t> step_offsets() const {
    std::vector<int64_t> off;
    for (int64_t t = 0; t < p_.kh * p_.kw; ++t)
      for (int64_t b = 0; b < groups_ / 16; ++b) off.push_back(tap_offset(b, t / p_.kw, t % p_.kw));
    return off;
  }

  // The phase planes of one channel group at dst: fill(sy, rows, r) writes the interleaved
  // pixels of image rows sy .. sy + rows - 1 (rows * W of them) at r; padding and every
  // position past the phase get `pad`. `row`: row_words() of scratch. A stride-1 conv
  // without left and right padding (every unpadded 1x1) has its image rows consecutive in
  // the plane: one fill of all H rows, not H fills of W pixels (on 7x7 and 14x14 planes the
  // per-row calls cost more than the interleave).
  template <class Fill>
  void interleave(uint32_t* dst, uint32_t* row, uint32_t pad, Fill fill) const {
    const bool one_phase = sh_ == 1 && sw_ == 1;
    for (int64_t ph = 0; ph < ph_ * pw_; ++ph) {
      uint32_t* plane = dst + ph * plane_;
      for (int64_t i = hq_ * wq_; i < plane_; ++i) plane[i] = pad;
      for (int64_t u = 0; u < hq_; ++u)  // phase rows past the padded image
        if (u * sh_ + ph / pw_ >= hp_)
          for (int64_t v = 0; v < wq_; ++v) plane[u * wq_ + v] = pad;
    }
    if (one_phase && wp_ == p_.w) {
      for (int64_t i = 0; i < p_.pad_t * wp_; ++i) dst[i] = pad;
      fill(int64_t{0}, p_.h, dst + p_.pad_t * wp_);
      for (int64_t i = (p_.pad_t + p_.h) * wp_; i < hp_ * wp_; ++i) dst[i] = pad;
      return;
    }
    for (int64_t iy = 0; iy < hp_; ++iy) {
      const int64_t a = iy % sh_;
      if (a >= ph_) continue;
      uint32_t* __restrict r = one_phase ? dst + iy * wp_ : row;
      const int64_t sy = iy - p_.pad_t;
      if (sy < 0 || sy >= p_.h) {
        for (int64_t i = 0; i < wp_; ++i) r[i] = pad;
      } else {
        for (int64_t i = 0; i < p_.pad_l; ++i) r[i] = pad;
        fill(sy, int64_t{1}, r + p_.pad_l);
        for (int64_t i = p_.pad_l + p_.w; i < wp_; ++i) r[i] = pad;
      }
      if (one_phase) continue;
      for (int64_t b = 0; b < pw_; ++b) {
        uint32_t* __restrict out = dst + (a * pw_ + b) * plane_ + iy / sh_ * wq_;
        for (int64_t v = 0; v < wq_; ++v) {
          const int64_t col = v * sw_ + b;
          out[v] = col < wp_ ? r[col] : pad;
        }
      }
    }
  }

 private:
  ConvProblem p_;
  int64_t groups_, hp_, wp_, sh_, sw_, hq_, wq_, ph_, pw_, plane_, group_;
  std::vector<AmxRun> runs_;
};

// The `direct` algorithm of an element type with an AMX implicit GEMM: the problems
// `applies` accepts on a path run it (`make`, after the tile permission), every other one
// runs `fallback`.
class AmxDirectAlgorithm final : public ConvAlgorithm {
 public:
  using Applies = bool (*)(const ConvProblem&, Isa);
  using Make = std::unique_ptr<PreparedConv> (*)(const ConvProblem&, const ConvWeights&,
                                                 const Knobs&, Isa);
  AmxDirectAlgorithm(Applies applies, const ConvAlgorithm& (*fallback)(), Make make,
                     const char* what)
      : applies_(applies), fallback_(fallback), make_(make), what_(what) {}
  std::string_view name() const override { return "direct"; }
  bool supports(const ConvProblem& p) const override {
    return fallback_().supports(p) || applies_(p, Isa::kAmx);
  }
  KnobSpace knob_space(const ConvProblem& p, Isa isa) const override {
    if (!applies_(p, isa)) return fallback_().knob_space(p, isa);
    return AmxDirectGrid::knob_space();
  }
  Knobs default_knobs(const ConvProblem& p, Isa isa) const override {
    if (!applies_(p, isa)) return fallback_().default_knobs(p, isa);
    return AmxDirectGrid::default_knobs(p);
  }
  std::unique_ptr<PreparedConv> prepare(const ConvProblem& p, const ConvWeights& w,
                                        const Knobs& knobs, Isa isa) const override {
    if (!applies_(p, isa)) return fallback_().prepare(p, w, knobs, isa);
    p.validate();
    knob_space(p, isa).validate(knobs, std::string(what_) + " " + p.key());
    amx_require(what_);
    return make_(p, w, knobs, isa);
  }

 private:
  Applies applies_;
  const ConvAlgorithm& (*fallback_)();
  Make make_;
  const char* what_;
};

}  // namespace dlas::conv_detail

// `gemm` convolution: per image and group, C[Kg][OH*OW] = W[Kg][R] x B[R][OH*OW] with
// R = C/g*KH*KW. B is im2col'ed block by block (nc pixels x kc rows) into NR-column
// panels in scratch; weights are packed once into MR-row panels. 1x1 stride-1 unpadded
// convs skip im2col: the offset table points B rows (= input channels) straight into
// the input (only a ragged last pixel panel is copied, so no read runs past the input).
//
// Knobs (BLIS-style cache blocking over a register-tiled microkernel):
//   ukernel      which microkernel (tile MR x NR)
//   mc, kc, nc   block of output channels / reduction rows / pixels per pass
//   loop_order   0: pixel panels outer, channel panels inner (B panel stays in L1);
//                1: channel panels outer (A panel stays in L1)
//   parallel     0: threads split pixel blocks (each packs its own B);
//                1: threads split output channels of one shared packed B block
//   orient       0: output channels are the microkernel's MR rows and pixels its NR
//                   vector columns (C[Kg][P] = W x B), stored straight into NCHW;
//                1: pixels are the MR rows and output channels the NR vector columns
//                   (C^T[P][Kg] = B^T x W^T) into a per-block scratch that is then
//                   transposed into NCHW. Small or ragged pixel counts (7x7 = 49, 2x2 = 4)
//                   fill whole vectors this way, and each weight panel is read once per
//                   pixel block instead of once per NR pixels.
#include <limits>
#include <memory>

#include "algo/conv/conv_impl.h"
#include "algo/conv/gemm_common.h"
#include "dlas/core/aligned_vector.h"
#include "dlas/core/error.h"
#include "dlas/hw/thread_pool.h"

namespace dlas {
namespace {

using conv_detail::div_up;
using conv_detail::round_up;

// Widest pixel panel of any microkernel (NR of the 1xN GEMV kernels is the widest).
constexpr int64_t kMaxPanelWidth = 128;

// out[j * ldo + i] = clamp(ct[i * ldct + j] + bias[j], lo, hi) for i < rows, j < cols: the
// pixel-rows block back into NCHW. 4 x 4 blocks through SSE-width GCC vectors (baseline
// x86-64, so this generic TU needs no ISA flags); the scalar loop takes the edges.
void transpose_bias_clamp(const float* ct, int64_t ldct, int64_t rows, int64_t cols,
                          const float* bias, float* out, int64_t ldo, float lo, float hi) {
  typedef float V4 __attribute__((vector_size(16)));
  typedef float V4u __attribute__((vector_size(16), aligned(4), may_alias));
  typedef int I4 __attribute__((vector_size(16)));
  const V4 vlo = {lo, lo, lo, lo}, vhi = {hi, hi, hi, hi};
  const int64_t rows4 = rows / 4 * 4, cols4 = cols / 4 * 4;
  for (int64_t j = 0; j < cols4; j += 4) {
    for (int64_t i = 0; i < rows4; i += 4) {
      const float* src = ct + i * ldct + j;
      const V4 r0 = *reinterpret_cast<const V4u*>(src);
      const V4 r1 = *reinterpret_cast<const V4u*>(src + ldct);
      const V4 r2 = *reinterpret_cast<const V4u*>(src + 2 * ldct);
      const V4 r3 = *reinterpret_cast<const V4u*>(src + 3 * ldct);
      const V4 t0 = __builtin_shuffle(r0, r1, I4{0, 4, 1, 5});
      const V4 t1 = __builtin_shuffle(r2, r3, I4{0, 4, 1, 5});
      const V4 t2 = __builtin_shuffle(r0, r1, I4{2, 6, 3, 7});
      const V4 t3 = __builtin_shuffle(r2, r3, I4{2, 6, 3, 7});
      const V4 c[4] = {
          __builtin_shuffle(t0, t1, I4{0, 1, 4, 5}), __builtin_shuffle(t0, t1, I4{2, 3, 6, 7}),
          __builtin_shuffle(t2, t3, I4{0, 1, 4, 5}), __builtin_shuffle(t2, t3, I4{2, 3, 6, 7})};
      for (int q = 0; q < 4; ++q) {
        V4 v = c[q] + bias[j + q];
        v = v < vlo ? vlo : v;  // NaN stays NaN, as in the scalar loop
        v = v > vhi ? vhi : v;
        *reinterpret_cast<V4u*>(out + (j + q) * ldo + i) = v;
      }
    }
  }
  auto scalar = [&](int64_t i0, int64_t i1, int64_t j0, int64_t j1) {
    for (int64_t j = j0; j < j1; ++j)
      for (int64_t i = i0; i < i1; ++i) {
        float v = ct[i * ldct + j] + bias[j];
        v = v < lo ? lo : v;
        out[j * ldo + i] = v > hi ? hi : v;
      }
  };
  scalar(rows4, rows, 0, cols4);
  scalar(0, rows, cols4, cols);
}

class PreparedGemmConv final : public PreparedF32Conv {
 public:
  PreparedGemmConv(const ConvProblem& p, const float* w, const float* bias, const Knobs& kn,
                   Isa isa)
      : p_(p), isa_(isa), uk_(&conv_detail::ukernel_from_knob(isa, kn.at("ukernel"))) {
    mr_ = uk_->mr, nr_ = uk_->nr;
    kg_ = p.k_per_group(), cg_ = p.c_per_group();
    r_ = cg_ * p.kh * p.kw;
    ohw_ = p.oh() * p.ow();
    pixel_rows_ = kn.at("orient") == 1;
    // The tile side that runs over pixels (NR, or MR when pixels are the rows).
    pw_ = pixel_rows_ ? mr_ : nr_;
    DLAS_CHECK(pw_ <= kMaxPanelWidth, ErrorKind::kInternal, "gemm conv: a ", pw_,
               "-pixel panel is wider than kMaxPanelWidth");
    const int64_t cw = pixel_rows_ ? nr_ : mr_;  // ... and over output channels
    mc_ = round_up(kn.at("mc"), cw);
    kc_ = kn.at("kc") < r_ ? kn.at("kc") : r_;
    nc_ = round_up(kn.at("nc"), pw_);
    if (nc_ > round_up(ohw_, pw_)) nc_ = round_up(ohw_, pw_);
    loop_order_ = kn.at("loop_order");
    by_channels_ = kn.at("parallel") == 1;
    direct_b_ = !pixel_rows_ && p.kh == 1 && p.kw == 1 && p.stride_h == 1 && p.stride_w == 1 &&
                p.pad_t == 0 && p.pad_l == 0 && p.pad_b == 0 && p.pad_r == 0;
    panels_ = div_up(kg_, cw);
    if (pixel_rows_) {
      wpack_ = pack_weights_transposed(p, w, nr_);
      bias_.assign(static_cast<size_t>(p.k), 0.f);
      if (bias) bias_.assign(bias, bias + p.k);
    } else {
      wpack_ = conv_detail::pack_conv_weights(p, w, *uk_);
      bias_.assign(static_cast<size_t>(panels_ * mr_ * p.groups), 0.f);
      if (bias)
        for (int64_t g = 0; g < p.groups; ++g)
          for (int64_t i = 0; i < kg_; ++i) bias_[g * panels_ * mr_ + i] = bias[g * kg_ + i];
    }
    for (int64_t kk = 0; kk < r_; ++kk) {
      panel_off_.push_back(kk * nr_);
      chan_off_.push_back(kk * p.h * p.w);
    }
    if (pixel_rows_)
      for (int64_t q = 0; q < ohw_; ++q) {
        pix_y_.push_back(static_cast<int32_t>(q / p.ow() * p.stride_h));
        pix_x_.push_back(static_cast<int32_t>(q % p.ow() * p.stride_w));
      }
    taps_ = conv_detail::conv_taps(p);
    const Epilogue& e = p.epilogue;
    fuse_clamp_ = e.is_clamp() && !e.residual;
    post_epilogue_ = !fuse_clamp_;
    cmin_ = fuse_clamp_ ? e.clamp_min() : -std::numeric_limits<float>::infinity();
    cmax_ = fuse_clamp_ ? e.clamp_max() : std::numeric_limits<float>::infinity();
  }

  size_t workspace_bytes(int threads) const override {
    // parallel=channels: one shared block of all R rows; else one kc-row block per thread.
    // Pixel rows add the block's transposed output, nc x (channel panels * NR).
    const int64_t slots = by_channels_ ? 1 : threads;
    return static_cast<size_t>(slots * slot_floats()) * sizeof(float);
  }

  size_t packed_bytes() const override { return (wpack_.size() + bias_.size()) * sizeof(float); }

  void run_typed(const float* in, float* out, const float* residual, void* workspace,
                 ThreadPool& pool) const override {
    float* ws = static_cast<float*>(workspace);
    const int64_t nblocks = div_up(ohw_, nc_);
    const int64_t threads = pool.threads();
    // Pixels [p0, p0 + ncols) of image n, group g; output-channel panels [ip0, ip1).
    auto run_block = [&](int64_t n, int64_t g, int64_t p0, int64_t ncols, int64_t ip0, int64_t ip1,
                         float* buf, bool packed_all) {
      if (pixel_rows_)
        block_pixel_rows(in, out, residual, n, g, p0, ncols, ip0, ip1, buf, packed_all);
      else
        block(in, out, residual, n, g, p0, ncols, ip0, ip1, buf, packed_all);
    };
    if (!by_channels_) {
      const int64_t images = p_.n * p_.groups, items = images * nblocks;
      if (images % threads == 0 || items >= 8 * threads) {
        // Whole nc-pixel blocks, contiguous runs of them per thread.
        pool.parallel_for(static_cast<size_t>(threads), [&](size_t t) {
          int64_t b, e;
          conv_detail::chunk_range(items, threads, static_cast<int64_t>(t), &b, &e);
          float* buf = ws + static_cast<int64_t>(t) * slot_floats();
          for (int64_t it = b; it < e; ++it) {
            const int64_t p0 = it % nblocks * nc_, ng = it / nblocks;
            run_block(ng / p_.groups, ng % p_.groups, p0, ohw_ - p0 < nc_ ? ohw_ - p0 : nc_, 0,
                      panels_, buf, false);
          }
        });
      } else {
        // Few images: every thread takes an equal run of each image's pixel panels (whole
        // blocks would split 28x28 = 3 x 256 + 16 pixels 512 : 272 over two threads), in
        // nc-pixel steps.
        const int64_t ppanels = div_up(ohw_, pw_);
        pool.parallel_for(static_cast<size_t>(threads), [&](size_t t) {
          int64_t b, e;
          conv_detail::chunk_range(ppanels, threads, static_cast<int64_t>(t), &b, &e);
          float* buf = ws + static_cast<int64_t>(t) * slot_floats();
          const int64_t q1 = e * pw_ < ohw_ ? e * pw_ : ohw_;
          for (int64_t ng = 0; ng < images; ++ng)
            for (int64_t q = b * pw_; q < q1; q += nc_)
              run_block(ng / p_.groups, ng % p_.groups, q, q1 - q < nc_ ? q1 - q : nc_, 0, panels_,
                        buf, false);
        });
      }
      return;
    }
    // Per pixel block, two phases in one loop (ThreadPool::parallel_phases): all R rows
    // packed (split over pixel panels), then the output-channel panels (split over
    // threads); the second barrier keeps the next block's pack off the one being read.
    pool.parallel_phases([&](size_t t, auto sync) {
      for (int64_t n = 0; n < p_.n; ++n)
        for (int64_t g = 0; g < p_.groups; ++g)
          for (int64_t nb = 0; nb < nblocks; ++nb) {
            const int64_t p0 = nb * nc_, ncols = ohw_ - p0 < nc_ ? ohw_ - p0 : nc_;
            int64_t b, e;
            conv_detail::chunk_range(div_up(ncols, pw_), threads, static_cast<int64_t>(t), &b, &e);
            if (pixel_rows_)
              pack_pixel_rows(in, n, g, p0, ncols, 0, r_, b, e, ws);
            else
              pack_panels(in, n, g, p0, ncols, 0, r_, b, e, ws);
            sync();
            conv_detail::chunk_range(panels_, threads, static_cast<int64_t>(t), &b, &e);
            if (b < e) run_block(n, g, p0, ncols, b, e, ws, true);
            sync();
          }
    });
  }

 private:
  bool direct_panel(int64_t p0, int64_t j) const { return direct_b_ && p0 + (j + 1) * nr_ <= ohw_; }

  // Floats of one scratch slot: the packed input block (all R rows when parallel=channels,
  // else kc rows) and, with pixel rows, the block's transposed output.
  int64_t slot_floats() const {
    const int64_t rows = by_channels_ ? r_ : kc_;
    int64_t f = conv_detail::slot_floats(rows * nc_);
    if (pixel_rows_) f += conv_detail::slot_floats(nc_ * panels_ * nr_);
    return f;
  }

  // W [K][R] -> [g][Kg/NR panels][R][NR] (channels past Kg zero): the B operand when
  // pixels are the microkernel rows.
  static AlignedVector<float> pack_weights_transposed(const ConvProblem& p, const float* w,
                                                      int64_t nr) {
    const int64_t kg = p.k_per_group(), r = p.c_per_group() * p.kh * p.kw;
    const int64_t panels = div_up(kg, nr);
    AlignedVector<float> out(static_cast<size_t>(p.groups * panels * r * nr), 0.f);
    for (int64_t g = 0; g < p.groups; ++g)
      for (int64_t j = 0; j < kg; ++j) {
        float* dst = out.data() + ((g * panels + j / nr) * r) * nr + j % nr;
        const float* src = w + (g * kg + j) * r;
        for (int64_t kk = 0; kk < r; ++kk) dst[kk * nr] = src[kk];
      }
    return out;
  }

  // im2col of reduction rows [r0, r1) for pixel panels [j0, j1) of the block starting at
  // pixel p0 (ncols pixels) into buf: panel j at buf + j * (r1 - r0) * W, row-major [r][W]
  // with W pixels per panel (NR; MR when pixels are the microkernel rows, which makes the
  // panel exactly the packed-A layout).
  void pack_panels(const float* in, int64_t n, int64_t g, int64_t p0, int64_t ncols, int64_t r0,
                   int64_t r1, int64_t j0, int64_t j1, float* buf) const {
    const int64_t ow = p_.ow(), sh = p_.stride_h, sw = p_.stride_w, h = p_.h, w = p_.w;
    const float* img = in + (n * p_.c + g * cg_) * h * w;
    const int64_t kcols = r1 - r0;
    // A panel's pixels as output-row segments, found once per panel (not per reduction row:
    // the divisions cost as much as the copies on 7x7 stride-2 or 3x3 stride-2 layers).
    conv_detail::PixelSegment segs[kMaxPanelWidth + 1];
    for (int64_t j = j0; j < j1; ++j) {
      if (direct_panel(p0, j)) continue;
      const int64_t q0 = p0 + j * pw_;
      const int64_t q1 = q0 + pw_ < p0 + ncols ? q0 + pw_ : p0 + ncols;  // valid pixels
      const int nsegs = conv_detail::split_pixel_rows(q0, q1, ow, segs);
      float* dst = buf + j * kcols * pw_;
      for (int64_t r = r0; r < r1; ++r, dst += pw_) {
        const conv_detail::ConvTap& tap = taps_[static_cast<size_t>(r)];
        const float* src = img + tap.chan_off + tap.dx;
        for (int si = 0; si < nsegs; ++si) {
          const conv_detail::PixelSegment& sg = segs[si];
          float* d = dst + sg.at - sg.ox0;  // d[ox] is pixel (oy, ox)
          const int64_t iy = sg.oy * sh + tap.dy;
          if (iy < 0 || iy >= h) {
            for (int64_t ox = sg.ox0; ox < sg.ox1; ++ox) d[ox] = 0.f;
            continue;
          }
          // Columns [ox_lo, ox_hi) of this tap read inside the input row.
          const int64_t lo = tap.ox_lo < sg.ox0 ? sg.ox0 : tap.ox_lo > sg.ox1 ? sg.ox1 : tap.ox_lo;
          int64_t hi = tap.ox_hi > sg.ox1 ? sg.ox1 : tap.ox_hi;
          if (hi < lo) hi = lo;
          const float* s = src + iy * w;
          int64_t ox = sg.ox0;
          for (; ox < lo; ++ox) d[ox] = 0.f;
          if (sw == 1)
            for (; ox < hi; ++ox) d[ox] = s[ox];
          else
            for (; ox < hi; ++ox) d[ox] = s[ox * sw];
          for (; ox < sg.ox1; ++ox) d[ox] = 0.f;
        }
        for (int64_t x = q1 - q0; x < pw_; ++x) dst[x] = 0.f;
      }
    }
  }

  // pack_panels for pixel rows: MR-pixel panels, so instead of walking output-row segments
  // (a division per segment, costly at 6 pixels) each pixel's input origin comes from the
  // prepare-time tables and every tap is a bounds-checked load.
  void pack_pixel_rows(const float* in, int64_t n, int64_t g, int64_t p0, int64_t ncols, int64_t r0,
                       int64_t r1, int64_t i0, int64_t i1, float* buf) const {
    const int64_t h = p_.h, w = p_.w, mr = mr_;
    const float* img = in + (n * p_.c + g * cg_) * h * w;
    for (int64_t i = i0; i < i1; ++i) {
      const int64_t q0 = p0 + i * mr;
      const int64_t valid = p0 + ncols - q0 < mr ? p0 + ncols - q0 : mr;
      const int32_t* py = pix_y_.data() + q0;
      const int32_t* px = pix_x_.data() + q0;
      float* dst = buf + i * (r1 - r0) * mr;
      for (int64_t r = r0; r < r1; ++r, dst += mr) {
        const conv_detail::ConvTap& tap = taps_[static_cast<size_t>(r)];
        const float* src = img + tap.chan_off;
        for (int64_t ii = 0; ii < valid; ++ii) {
          const int64_t iy = py[ii] + tap.dy, ix = px[ii] + tap.dx;
          dst[ii] = static_cast<uint64_t>(iy) < static_cast<uint64_t>(h) &&
                            static_cast<uint64_t>(ix) < static_cast<uint64_t>(w)
                        ? src[iy * w + ix]
                        : 0.f;
        }
        for (int64_t ii = valid; ii < mr; ++ii) dst[ii] = 0.f;
      }
    }
  }

  // One pixel block of image n, group g, output-channel panels [ip0, ip1). When
  // `packed_all` the block's B (all R rows) is already in buf; else it is packed here
  // kc rows at a time.
  void block(const float* in, float* out, const float* residual, int64_t n, int64_t g, int64_t p0,
             int64_t ncols, int64_t ip0, int64_t ip1, float* buf, bool packed_all) const {
    const int64_t npanels = div_up(ncols, nr_);
    const float* in_g = in + (n * p_.c + g * cg_) * p_.h * p_.w;
    float* out_g = out + (n * p_.k + g * kg_) * ohw_;
    const float* wg = wpack_.data() + g * panels_ * r_ * mr_;
    const float* bias_g = bias_.data() + g * panels_ * mr_;
    const float inf = std::numeric_limits<float>::infinity();
    for (int64_t r0 = 0; r0 < r_; r0 += kc_) {
      const int64_t kcols = r_ - r0 < kc_ ? r_ - r0 : kc_;
      const bool first = r0 == 0, last = r0 + kcols == r_;
      // packed_all: panel j holds all R rows at buf + j * R * NR; else this kc block's rows.
      if (!packed_all) pack_panels(in, n, g, p0, ncols, r0, r0 + kcols, 0, npanels, buf);
      for (int64_t m0 = ip0; m0 < ip1; m0 += mc_ / mr_) {
        const int64_t m1 = m0 + mc_ / mr_ < ip1 ? m0 + mc_ / mr_ : ip1;
        auto call = [&](int64_t ip, int64_t j) {
          const float* b;
          const int64_t* off;
          if (direct_panel(p0, j)) {
            b = in_g + r0 * p_.h * p_.w + p0 + j * nr_;
            off = chan_off_.data();
          } else if (packed_all) {
            b = buf + j * r_ * nr_ + r0 * nr_;
            off = panel_off_.data();
          } else {
            b = buf + j * kcols * nr_;
            off = panel_off_.data();
          }
          const int64_t rows = kg_ - ip * mr_ < mr_ ? kg_ - ip * mr_ : mr_;
          const int64_t cols = ncols - j * nr_ < nr_ ? ncols - j * nr_ : nr_;
          uk_->fn(static_cast<size_t>(rows), static_cast<size_t>(cols), static_cast<size_t>(kcols),
                  wg + (ip * r_ + r0) * mr_, b, off, out_g + ip * mr_ * ohw_ + p0 + j * nr_,
                  static_cast<size_t>(ohw_), first ? bias_g + ip * mr_ : nullptr, !first,
                  last ? cmin_ : -inf, last ? cmax_ : inf);
        };
        if (loop_order_ == 0) {
          for (int64_t j = 0; j < npanels; ++j)
            for (int64_t ip = m0; ip < m1; ++ip) call(ip, j);
        } else {
          for (int64_t ip = m0; ip < m1; ++ip)
            for (int64_t j = 0; j < npanels; ++j) call(ip, j);
        }
      }
    }
    if (!post_epilogue_) return;
    const int64_t k_end = ip1 * mr_ < kg_ ? ip1 * mr_ : kg_;
    for (int64_t kk = ip0 * mr_; kk < k_end; ++kk) {
      const int64_t off = (n * p_.k + g * kg_ + kk) * ohw_ + p0;
      apply_epilogue(isa_, p_.epilogue, static_cast<size_t>(ncols), out + off, 0.f,
                     residual ? residual + off : nullptr);
    }
  }

  // Pixel-rows variant of block(): C^T tiles (MR pixels x NR channels) accumulate in the
  // slot's transposed-output scratch ct[pixel][channel] over kc blocks, then the block is
  // transposed into NCHW with the bias (and the clamp when it is the whole epilogue).
  void block_pixel_rows(const float* in, float* out, const float* residual, int64_t n, int64_t g,
                        int64_t p0, int64_t ncols, int64_t jp0, int64_t jp1, float* buf,
                        bool packed_all) const {
    const int64_t npanels = div_up(ncols, mr_);
    const int64_t ldct = panels_ * nr_;
    float* ct = buf + conv_detail::slot_floats((by_channels_ ? r_ : kc_) * nc_);
    const float* wg = wpack_.data() + g * panels_ * r_ * nr_;
    const float inf = std::numeric_limits<float>::infinity();
    for (int64_t r0 = 0; r0 < r_; r0 += kc_) {
      const int64_t kcols = r_ - r0 < kc_ ? r_ - r0 : kc_;
      const bool first = r0 == 0;
      if (!packed_all) pack_pixel_rows(in, n, g, p0, ncols, r0, r0 + kcols, 0, npanels, buf);
      for (int64_t m0 = jp0; m0 < jp1; m0 += mc_ / nr_) {
        const int64_t m1 = m0 + mc_ / nr_ < jp1 ? m0 + mc_ / nr_ : jp1;
        auto call = [&](int64_t i, int64_t jp) {
          const float* a = packed_all ? buf + i * r_ * mr_ + r0 * mr_ : buf + i * kcols * mr_;
          const int64_t rows = ncols - i * mr_ < mr_ ? ncols - i * mr_ : mr_;
          const int64_t cols = kg_ - jp * nr_ < nr_ ? kg_ - jp * nr_ : nr_;
          uk_->fn(static_cast<size_t>(rows), static_cast<size_t>(cols), static_cast<size_t>(kcols),
                  a, wg + (jp * r_ + r0) * nr_, panel_off_.data(), ct + i * mr_ * ldct + jp * nr_,
                  static_cast<size_t>(ldct), nullptr, !first, -inf, inf);
        };
        if (loop_order_ == 0) {
          for (int64_t i = 0; i < npanels; ++i)
            for (int64_t jp = m0; jp < m1; ++jp) call(i, jp);
        } else {
          for (int64_t jp = m0; jp < m1; ++jp)
            for (int64_t i = 0; i < npanels; ++i) call(i, jp);
        }
      }
    }
    const int64_t k0 = jp0 * nr_, k1 = jp1 * nr_ < kg_ ? jp1 * nr_ : kg_;
    transpose_bias_clamp(ct + k0, ldct, ncols, k1 - k0, bias_.data() + g * kg_ + k0,
                         out + (n * p_.k + g * kg_ + k0) * ohw_ + p0, ohw_, cmin_, cmax_);
    if (!post_epilogue_) return;
    for (int64_t kk = k0; kk < k1; ++kk) {
      const int64_t off = (n * p_.k + g * kg_ + kk) * ohw_ + p0;
      apply_epilogue(isa_, p_.epilogue, static_cast<size_t>(ncols), out + off, 0.f,
                     residual ? residual + off : nullptr);
    }
  }

  ConvProblem p_;
  Isa isa_;
  const ukernel::F32GemmUkernel* uk_;
  int64_t mr_, nr_, pw_, kg_, cg_, r_, ohw_, mc_, kc_, nc_, loop_order_, panels_;
  bool pixel_rows_, by_channels_, direct_b_, fuse_clamp_, post_epilogue_;
  float cmin_, cmax_;
  AlignedVector<float> wpack_, bias_;
  std::vector<int64_t> panel_off_, chan_off_;
  std::vector<conv_detail::ConvTap> taps_;
  std::vector<int32_t> pix_y_, pix_x_;  // pixel rows: each output pixel's input origin
};

class GemmConvAlgorithm final : public ConvAlgorithm {
 public:
  std::string_view name() const override { return "gemm"; }
  bool supports(const ConvProblem&) const override { return true; }

  KnobSpace knob_space(const ConvProblem&, Isa isa) const override {
    KnobSpace s;
    s.knobs.push_back(conv_detail::ukernel_knob(isa));
    s.knobs.push_back(
        {"mc", {16, 32, 64, 128, 256, 4096}, "output channels per block (rounded up to MR)"});
    s.knobs.push_back({"kc", {64, 128, 256, 512, 1024, 8192}, "reduction rows per block"});
    s.knobs.push_back(
        {"nc", {64, 128, 256, 512, 1024, 4096}, "output pixels per block (rounded up to NR)"});
    s.knobs.push_back({"loop_order", {0, 1}, "0: pixel panels outer; 1: channel panels outer"});
    s.knobs.push_back({"parallel", {0, 1}, "0: threads split pixel blocks; 1: output channels"});
    s.knobs.push_back({"orient",
                       {0, 1},
                       "0: output channels are the tile rows, pixels the vector columns; "
                       "1: pixels are the rows, output channels the vector columns"});
    return s;
  }

  Knobs default_knobs(const ConvProblem& p, Isa isa) const override {
    // A 256-row x 256-pixel B block (256 KiB) sits in a 512 KiB+ L2 next to the A block.
    // Threads split the pixels (each an equal run of panels, no barrier inside the layer)
    // unless there are fewer than 64: then a pixel split leaves a thread idle or with a
    // ragged panel, and splitting output channels of one shared packed block wins.
    // Measured at 2 threads (interleaved, DLAS_BENCH_KNOBS=parallel=0|1 dlas_bench_conv,
    // zoo layers): channels 1.8x faster on 2x2 and 4x4 outputs and 1.07x on 7x7; pixels
    // 1.0-1.05x on 8x8..28x28 and 1.1-1.35x from 32x32 up.
    // Pixel rows when the tile lanes they fill beat the ones channel rows fill by more
    // than the ~10% its input pack and output transpose cost (measured with
    // DLAS_BENCH_KNOBS=orient=1 build/dlas_bench_conv: 7x7 outputs gain 5-25%, 2x2
    // outputs 2.5-3x, 4x4 and 14x14 lose 15-40%).
    const auto& uk = conv_detail::ukernel_from_knob(isa, 0);
    const double px = static_cast<double>(p.oh() * p.ow()),
                 kg = static_cast<double>(p.k_per_group());
    const double fill_channel_rows = px / static_cast<double>(round_up(p.oh() * p.ow(), uk.nr));
    const double fill_pixel_rows = px / static_cast<double>(round_up(p.oh() * p.ow(), uk.mr)) * kg /
                                   static_cast<double>(round_up(p.k_per_group(), uk.nr));
    const int64_t orient = fill_pixel_rows > 1.1 * fill_channel_rows ? 1 : 0;
    return {{"ukernel", 0},    {"mc", 4096},      {"kc", 256},
            {"nc", 256},       {"loop_order", 0}, {"parallel", p.oh() * p.ow() < 64 ? 1 : 0},
            {"orient", orient}};
  }

  std::unique_ptr<PreparedConv> prepare(const ConvProblem& p, const ConvWeights& view,
                                        const Knobs& knobs, Isa isa) const override {
    const float* weights = view.f32_data();
    const float* bias = view.bias;
    p.validate();
    knob_space(p, isa).validate(knobs, "gemm conv " + p.key());
    return std::make_unique<PreparedGemmConv>(p, weights, bias, knobs, isa);
  }
};

}  // namespace

const ConvAlgorithm& gemm_conv_algorithm() {
  static const GemmConvAlgorithm algo;
  return algo;
}

}  // namespace dlas

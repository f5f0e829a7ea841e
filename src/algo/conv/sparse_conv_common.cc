#include "algo/conv/sparse_conv_common.h"
#include "algo/conv/conv_impl.h"

#include <cstring>
#include <limits>
#include <string>

#include "algo/conv/gemm_common.h"
#include "algo/microkernels/f32-sspack/f32_sspack.h"
#include "dlas/core/error.h"
#include "dlas/hw/thread_pool.h"

namespace dlas::conv_detail {
namespace {

constexpr SparseBlock kFormatBlocks[] = {{1, 1}, {1, 1}, {4, 1}, {8, 1}, {1, 4}};

// n (< 4 in practice: padding columns) zeros, inline: GCC turns a plain zeroing loop into a
// libc memset call.
inline void zero_few(float* d, int64_t n) {
  int64_t j = 0;
  for (; j + 4 <= n; j += 4) {
    const float z[4] = {0.f, 0.f, 0.f, 0.f};
    __builtin_memcpy(d + j, z, 16);
  }
  if (j < n) d[j++] = 0.f;
  if (j < n) d[j++] = 0.f;
  if (j < n) d[j] = 0.f;
}

// Row src[0, w) -> even[k] = src[2k], odd[k] = src[2k + 1] (odd may be null), four pairs
// per step with 4-float vector shuffles (any x86-64: SSE).
inline void deinterleave2(const float* src, int64_t w, float* even, float* odd) {
  typedef float V4 __attribute__((vector_size(16)));
  typedef int M4 __attribute__((vector_size(16)));
  int64_t k = 0;
  for (; 2 * k + 8 <= w; k += 4) {
    V4 a, b;
    __builtin_memcpy(&a, src + 2 * k, 16);
    __builtin_memcpy(&b, src + 2 * k + 4, 16);
    const V4 e = __builtin_shuffle(a, b, M4{0, 2, 4, 6});
    __builtin_memcpy(even + k, &e, 16);
    if (odd) {
      const V4 o = __builtin_shuffle(a, b, M4{1, 3, 5, 7});
      __builtin_memcpy(odd + k, &o, 16);
    }
  }
  for (; 2 * k < w; ++k) {
    even[k] = src[2 * k];
    if (odd && 2 * k + 1 < w) odd[k] = src[2 * k + 1];
  }
}

// n floats, inline: the spans are short (a 4..34-pixel row), where a libc memcpy call
// costs more than the copy.
inline void copy_floats(float* d, const float* s, int64_t n) {
  int64_t j = 0;
  for (; j + 4 <= n; j += 4) __builtin_memcpy(d + j, s + j, 16);
  for (; j < n; ++j) d[j] = s[j];
}

// Fraction of the stored BRx1 blocks' values that are nonzero, over every group.
double block_fill(const ConvProblem& p, const float* w, int br) {
  const int64_t kg = p.k_per_group(), r = p.c_per_group() * p.kh * p.kw;
  int64_t nnz = 0, blocks = 0;
  for (int64_t g = 0; g < p.groups; ++g)
    for (int64_t k0 = 0; k0 < kg; k0 += br)
      for (int64_t j = 0; j < r; ++j) {
        int64_t n = 0;
        for (int64_t i = k0; i < k0 + br && i < kg; ++i) n += w[(g * kg + i) * r + j] != 0.f;
        nnz += n;
        blocks += n > 0;
      }
  return blocks == 0 ? 0.0 : static_cast<double>(nnz) / static_cast<double>(blocks * br);
}

class PreparedSparseConv final : public PreparedF32Conv {
 public:
  PreparedSparseConv(const ConvProblem& p, const float* w, const float* bias,
                     const SparseConvConfig& c, Isa isa)
      : p_(p),
        isa_(isa),
        split_(c.split),
        direct_(c.direct),
        implicit_(c.implicit),
        spatial_(c.spatial) {
    kg_ = p.k_per_group(), cg_ = p.c_per_group();
    r_ = cg_ * p.kh * p.kw;
    ohw_ = p.oh() * p.ow();
    SparseBlock block;
    if (spatial_) {
      implicit_ = true;
      vc_ = c.vc > 0 ? c.vc : sparse_spatial_vc(isa, p, w);
      vh_ = c.vh, vw_ = c.vw;
      block = {static_cast<int>(vc_), 1};
      const ukernel::F32SspackUkernels* set = ukernel::find_f32_sspack(isa, static_cast<int>(vc_));
      DLAS_CHECK(set != nullptr, ErrorKind::kInvalidInput, "sparse-spatial-pack: no kernel for ",
                 vc_, " output channels per block");
      sk_ = set->select(static_cast<int>(vc_ / set->lanes), static_cast<int>(vh_),
                        static_cast<int>(vw_));
      DLAS_CHECK(sk_ != nullptr, ErrorKind::kInvalidInput,
                 "sparse-spatial-pack: no kernel for tile ", vh_, "x", vw_);
    } else {
      block = sparse_block_for(c.format, p, w);
      // A 1x4 block needs >= 4 input rows, each a fixed stride apart (not taps).
      if (block.cols > r_ || (implicit_ && block.cols > 1)) block = {1, 1};
      uk_ = ukernel::find_f32_spmm(isa, block, static_cast<int>(c.vecs));
      DLAS_CHECK(uk_ != nullptr, ErrorKind::kInternal, "no f32 spmm kernel for ",
                 sparse_format_name(block));
    }
    br_ = block.rows;
    nc_ = c.nc <= 0 || c.nc > ohw_ ? ohw_ : c.nc;
    if (direct_) nc_ = ohw_;
    const int64_t in_stride = direct_ ? p.h * p.w : nc_;  // floats between B rows
    std::vector<int64_t> row_off;
    if (implicit_) {
      if (split_ == SparseSplit::kBlocks) split_ = SparseSplit::kPixels;
      const int64_t sh = p.stride_h, sw = p.stride_w;
      DLAS_CHECK(sh * sw <= 16, ErrorKind::kUnsupported, "sparse conv: stride ", sh, "x", sw,
                 " has more than 16 phases");
      qh_ = div_up(p.h + p.pad_t + p.pad_b, sh), qw_ = div_up(p.w + p.pad_l + p.pad_r, sw);
      plane_ = qh_ * qw_, chan_ = sh * sw * plane_, grid_ = p.oh() * qw_;
      int64_t max_q;  // the last wide pixel a tile reads, relative to a tap's offset
      if (spatial_) {
        th_ = div_up(p.oh(), vh_), tw_ = div_up(p.ow(), vw_);
        max_q = (th_ * vh_ - 1) * qw_ + tw_ * vw_ - 1;
      } else {
        // Whole vectors only: the kernel never runs its 4-lane and one-pixel tails here.
        wide_ = div_up(grid_, uk_->lanes) * uk_->lanes;
        max_q = wide_ - 1;
        // Output rows of whole vectors (32/16/8 wide on AVX2) go straight into NCHW with 2-D
        // tiles: no scratch grid, no padding columns computed, no copy-out.
        rows_mode_ = uk_->rows_fn != nullptr && p.ow() % uk_->lanes == 0 && c.rows != 0;
      }
      for (int64_t c0 = 0; c0 < cg_; ++c0)
        for (int64_t ky = 0; ky < p.kh; ++ky)
          for (int64_t kx = 0; kx < p.kw; ++kx) {
            const int64_t dy = ky * p.dil_h, dx = kx * p.dil_w;
            row_off.push_back(c0 * chan_ + ((dy % sh) * sw + dx % sw) * plane_ + dy / sh * qw_ +
                              dx / sw);
          }
      int64_t max_off = 0;
      for (int64_t o : row_off) max_off = o > max_off ? o : max_off;
      slack_ = max_off + max_q + 1 - cg_ * chan_;
      slack_ = slack_ > 0 ? slack_ : 0;
      kc_ = reduction_chunk(c, w);
    }
    if (kc_ <= 0 || kc_ > cg_) kc_ = cg_;
    nchunks_ = div_up(cg_, kc_);
    kc_ = div_up(cg_, nchunks_);  // equal chunks
    const int64_t taps = p.kh * p.kw;
    for (int64_t g = 0; g < p.groups; ++g) {
      const float* wg = w + g * kg_ * r_;
      const float* bg = bias ? bias + g * kg_ : nullptr;
      std::vector<int64_t> cost(static_cast<size_t>(div_up(kg_, br_)) + 1, 0);
      for (int64_t j = 0; j < nchunks_; ++j) {
        // Chunk j: input channels [c0, c1) = columns [c0 * taps, c1 * taps).
        const int64_t c0 = j * kc_, c1 = c0 + kc_ < cg_ ? c0 + kc_ : cg_;
        const int64_t ncol = (c1 - c0) * taps;
        std::vector<float> slice(static_cast<size_t>(kg_ * ncol));
        for (int64_t k = 0; k < kg_; ++k)
          for (int64_t r = 0; r < ncol; ++r)
            slice[static_cast<size_t>(k * ncol + r)] = wg[k * r_ + c0 * taps + r];
        const SparseMatrix m = nchunks_ == 1 ? encode_sparse(wg, kg_, r_, block)
                                             : encode_sparse(slice.data(), kg_, ncol, block);
        const float* bj = j == 0 ? bg : nullptr;
        if (implicit_) {
          const std::vector<int64_t> offs(row_off.begin() + c0 * taps, row_off.begin() + c1 * taps);
          packs_.push_back(ukernel::pack_f32_spmm(m, bj, offs));
        } else {
          packs_.push_back(ukernel::pack_f32_spmm(m, bj, in_stride));
        }
        const auto& d = packs_.back().d_off;
        for (size_t b = 0; b < cost.size(); ++b) cost[b] += d[b] + static_cast<int64_t>(b);
      }
      costs_.push_back(std::move(cost));
    }
    in_stride_bytes_ = static_cast<size_t>(in_stride) * sizeof(float);
    for (int64_t c0 = 0; c0 < cg_; ++c0)
      for (int64_t ky = 0; ky < p.kh; ++ky)
        for (int64_t kx = 0; kx < p.kw; ++kx)
          taps_.push_back({c0 * p.h * p.w, ky * p.dil_h - p.pad_t, kx * p.dil_w - p.pad_l});
    const Epilogue& e = p.epilogue;
    post_epilogue_ = !(e.is_clamp() && !e.residual);
    cmin_ = post_epilogue_ ? -std::numeric_limits<float>::infinity() : e.clamp_min();
    cmax_ = post_epilogue_ ? std::numeric_limits<float>::infinity() : e.clamp_max();
  }

  size_t workspace_bytes(int threads) const override {
    if (spatial_)
      return static_cast<size_t>(slot_floats(phase_floats()) +
                                 threads * slot_floats(tile_floats())) *
             4;
    if (rows_mode_) return static_cast<size_t>(slot_floats(phase_floats())) * 4;
    if (implicit_) return static_cast<size_t>(slot_floats(phase_floats()) + kg_ * wide_) * 4;
    if (direct_) return 0;
    const int64_t slots = split_ == SparseSplit::kBlocks ? threads : 1;
    return static_cast<size_t>(slots * slot_floats(r_ * nc_)) * sizeof(float);
  }

  size_t packed_bytes() const override {
    size_t b = 0;
    for (const auto& pk : packs_) b += pk.bytes();
    return b;
  }

  void run_typed(const float* in, float* out, const float* residual, void* workspace,
                 ThreadPool& pool) const override {
    float* ws = static_cast<float*>(workspace);
    const int64_t threads = pool.threads();
    const int64_t nblocks = div_up(ohw_, nc_);
    if (implicit_) {
      run_implicit(in, out, residual, ws, pool);
      return;
    }
    if (split_ == SparseSplit::kBlocks) {
      const int64_t items = p_.n * p_.groups * nblocks;
      pool.parallel_for(static_cast<size_t>(threads), [&](size_t t) {
        int64_t b, e;
        chunk_range(items, threads, static_cast<int64_t>(t), &b, &e);
        float* buf = ws + static_cast<int64_t>(t) * slot_floats(r_ * nc_);
        for (int64_t it = b; it < e; ++it) {
          const int64_t nb = it % nblocks, ng = it / nblocks;
          const int64_t n = ng / p_.groups, g = ng % p_.groups;
          const int64_t p0 = nb * nc_, ncols = ohw_ - p0 < nc_ ? ohw_ - p0 : nc_;
          if (!direct_) pack(in, n, g, p0, ncols, 0, r_, buf);
          compute(in, buf, out, residual, n, g, p0, ncols, 0, block_rows(), 0, ncols);
        }
      });
      return;
    }
    for (int64_t n = 0; n < p_.n; ++n)
      for (int64_t g = 0; g < p_.groups; ++g)
        for (int64_t nb = 0; nb < nblocks; ++nb) {
          const int64_t p0 = nb * nc_, ncols = ohw_ - p0 < nc_ ? ohw_ - p0 : nc_;
          if (!direct_)
            pool.parallel_for(static_cast<size_t>(threads), [&](size_t t) {
              int64_t r0, r1;
              chunk_range(r_, threads, static_cast<int64_t>(t), &r0, &r1);
              if (r0 < r1) pack(in, n, g, p0, ncols, r0, r1, ws);
            });
          pool.parallel_for(static_cast<size_t>(threads), [&](size_t t) {
            const int64_t ti = static_cast<int64_t>(t);
            if (split_ == SparseSplit::kChannels) {
              const int64_t b0 = balanced_row(g, threads, ti),
                            b1 = balanced_row(g, threads, ti + 1);
              if (b0 < b1) compute(in, ws, out, residual, n, g, p0, ncols, b0, b1, 0, ncols);
            } else {
              // Whole vectors per thread (not whole tiles: the kernel's tails take fewer
              // vectors, so 128 pixels still split over 2 threads with 64-pixel tiles).
              const int64_t unit = uk_->lanes;
              int64_t t0, t1;
              chunk_range(div_up(ncols, unit), threads, ti, &t0, &t1);
              const int64_t q0 = t0 * unit, q1 = t1 * unit < ncols ? t1 * unit : ncols;
              if (q0 < q1) compute(in, ws, out, residual, n, g, p0, ncols, 0, block_rows(), q0, q1);
            }
          });
        }
  }

 private:
  struct RowTap {      // reduction row r = (c, ky, kx) of one group
    int64_t chan_off;  // c * H * W
    int64_t dy, dx;    // ky * dil_h - pad_t, kx * dil_w - pad_l
  };

  int64_t block_rows() const { return div_up(kg_, br_); }

  // Floats of the padded phase-split input of one group, plus zero slack: the last taps
  // read up to a tile's (or the wide grid's) extent past their offset.
  int64_t phase_floats() const { return cg_ * chan_ + slack_; }

  // sparse-spatial-pack: one thread's tiles of every block row (a tile's VC x VH x VW sums
  // stay there while the reduction chunks add up).
  int64_t tile_floats() const { return block_rows() * vc_ * vh_ * vw_; }

  // Input channels per reduction chunk. Each chunk's input rows should stay in L1 while
  // every block row walks them (16 KiB of the 32: weights, outputs and the next chunk need
  // the rest), but a chunk also costs every row a reload and store of its sums, so a row
  // keeps >= 32 stored blocks per chunk on average.
  int64_t reduction_chunk(const SparseConvConfig& c, const float* w) const {
    if (c.kc > 0) return c.kc;
    const int64_t sh = p_.stride_h, taps = p_.kh * p_.kw;
    const int64_t span = spatial_ ? vh_ : div_up(uk_->mr(), qw_);  // output rows per tile
    const int64_t rows = span + (p_.kh - 1) * p_.dil_h / sh + 1;
    int64_t fp = p_.stride_w * sh * rows * qw_;  // floats per channel a tile touches
    fp = fp < chan_ ? fp : chan_;
    const int64_t fit = (16384 / 4) / (fp > 0 ? fp : 1);
    int64_t blocks = 0;  // stored blocks of the whole conv (any group: they are alike)
    {
      const SparseMatrix m = encode_sparse(w, kg_, r_, SparseBlock{static_cast<int>(br_), 1});
      blocks = m.nnz_blocks();
    }
    const double per_channel =
        static_cast<double>(blocks) / static_cast<double>(block_rows() * cg_);  // per row
    const int64_t enough = per_channel > 0 ? static_cast<int64_t>(32.0 / per_channel) + 1 : cg_;
    (void)taps;
    const int64_t kc = fit > enough ? fit : enough;
    return kc < 8 ? 8 : kc;
  }

  void run_implicit(const float* in, float* out, const float* residual, float* ws,
                    ThreadPool& pool) const {
    const int64_t threads = pool.threads();
    float* buf = ws;
    float* wide = ws + slot_floats(phase_floats());
    for (int64_t n = 0; n < p_.n; ++n)
      for (int64_t g = 0; g < p_.groups; ++g) {
        const float* img = in + (n * p_.c + g * cg_) * p_.h * p_.w;
        pool.parallel_for(static_cast<size_t>(threads), [&](size_t t) {
          int64_t c0, c1;
          chunk_range(cg_, threads, static_cast<int64_t>(t), &c0, &c1);
          pack_phases(img, c0, c1, buf);
          if (static_cast<int64_t>(t) == threads - 1)
            for (int64_t i = cg_ * chan_; i < phase_floats(); ++i) buf[i] = 0.f;
        });
        if (spatial_) {
          float* tiles = ws + slot_floats(phase_floats());
          pool.parallel_for(static_cast<size_t>(threads), [&](size_t t) {
            const int64_t ti = static_cast<int64_t>(t);
            int64_t b0 = 0, b1 = block_rows(), t0 = 0, t1 = th_ * tw_;
            if (split_ == SparseSplit::kChannels)
              b0 = balanced_row(g, threads, ti), b1 = balanced_row(g, threads, ti + 1);
            else
              chunk_range(th_ * tw_, threads, ti, &t0, &t1);
            float* tb = tiles + ti * slot_floats(tile_floats());
            if (b0 < b1)
              for (int64_t tile = t0; tile < t1; ++tile)
                compute_spatial(buf, tb, out, residual, n, g, b0, b1, tile);
          });
          continue;
        }
        pool.parallel_for(static_cast<size_t>(threads), [&](size_t t) {
          const int64_t ti = static_cast<int64_t>(t);
          if (rows_mode_) {
            int64_t b0 = 0, b1 = block_rows(), y0 = 0, y1 = p_.oh();
            if (split_ == SparseSplit::kChannels)
              b0 = balanced_row(g, threads, ti), b1 = balanced_row(g, threads, ti + 1);
            else
              chunk_range(p_.oh(), threads, ti, &y0, &y1);
            if (b0 < b1 && y0 < y1) compute_rows(buf, out, residual, n, g, b0, b1, y0, y1);
            return;
          }
          int64_t b0 = 0, b1 = block_rows(), q0 = 0, q1 = wide_;
          if (split_ == SparseSplit::kChannels) {
            b0 = balanced_row(g, threads, ti), b1 = balanced_row(g, threads, ti + 1);
          } else {
            const int64_t unit = uk_->lanes;
            int64_t t0, t1;
            chunk_range(div_up(wide_, unit), threads, ti, &t0, &t1);
            q0 = t0 * unit, q1 = t1 * unit < wide_ ? t1 * unit : wide_;
          }
          if (b0 < b1 && q0 < q1) compute_wide(buf, wide, out, residual, n, g, b0, b1, q0, q1);
        });
      }
  }

  // Channels [c0, c1) of one group's input planes -> buf: per channel sh*sw phase planes of
  // qh_ x qw_, zero where the padded pixel is padding or past the padded input. Only the
  // borders are zeroed (whole rows above and below, a few columns per row) and the valid
  // spans copied inline -- per-row libc calls of a few bytes, or zeroing every plane in
  // bulk, took about a third of a 95%-sparse layer's time. Stride 2 splits each input row
  // into its two column phases in one vector pass.
  void pack_phases(const float* img, int64_t c0, int64_t c1, float* buf) const {
    const int64_t sh = p_.stride_h, sw = p_.stride_w, h = p_.h, w = p_.w;
    struct Span {
      int64_t ilo, ihi, jlo, jhi;
    };
    Span spans[16];  // per phase (py, px); sh*sw <= 16 is checked at prepare
    for (int64_t py = 0; py < sh; ++py)
      for (int64_t px = 0; px < sw; ++px) {
        // Columns j whose input x = j*sw + px - pad_l is in [0, w): [jlo, jhi); rows i
        // whose y = i*sh + py - pad_t is in [0, h): [ilo, ihi).
        const int64_t x0 = px - p_.pad_l, y0 = py - p_.pad_t;
        Span& sp = spans[py * sw + px];
        sp.jlo = x0 >= 0 ? 0 : div_up(-x0, sw);
        sp.jhi = w - x0 <= 0 ? 0 : div_up(w - x0, sw);
        sp.jhi = sp.jhi < qw_ ? sp.jhi : qw_;
        sp.ilo = y0 >= 0 ? 0 : div_up(-y0, sh);
        sp.ihi = h - y0 <= 0 ? 0 : div_up(h - y0, sh);
        sp.ihi = sp.ihi < qh_ ? sp.ihi : qh_;
        if (sp.jlo >= sp.jhi || sp.ilo >= sp.ihi) sp.ilo = sp.ihi = qh_;  // all zero
      }
    // Small planes (8x8 and less): one bulk zeroing beats a few calls per plane.
    const bool bulk = chan_ <= 256;
    if (bulk && c1 > c0)
      std::memset(buf + c0 * chan_, 0, static_cast<size_t>((c1 - c0) * chan_) * sizeof(float));
    for (int64_t c = c0; c < c1; ++c) {
      // Borders first, then the data (a stride-2 row writes both column phases at once).
      for (int64_t ph = 0; !bulk && ph < sh * sw; ++ph) {
        const Span& sp = spans[ph];
        float* dst = buf + c * chan_ + ph * plane_;
        if (sp.ilo > 0) std::memset(dst, 0, static_cast<size_t>(sp.ilo * qw_) * sizeof(float));
        if (sp.ihi < qh_)
          std::memset(dst + sp.ihi * qw_, 0,
                      static_cast<size_t>((qh_ - sp.ihi) * qw_) * sizeof(float));
        for (int64_t i = sp.ilo; i < sp.ihi; ++i) {
          zero_few(dst + i * qw_, sp.jlo);
          zero_few(dst + i * qw_ + sp.jhi, qw_ - sp.jhi);
        }
      }
      for (int64_t py = 0; py < sh; ++py) {
        if (sw == 2) {
          const Span& se = spans[py * 2 + p_.pad_l % 2];  // even x land in this phase
          const Span& so = spans[py * 2 + (p_.pad_l + 1) % 2];
          float* de = buf + c * chan_ + (py * 2 + p_.pad_l % 2) * plane_;
          float* dodd = buf + c * chan_ + (py * 2 + (p_.pad_l + 1) % 2) * plane_;
          for (int64_t i = se.ilo; i < se.ihi; ++i) {
            const float* src = img + (c * h + i * sh + py - p_.pad_t) * w;
            // x = 2k lands at column k + pad_l/2 of its phase, x = 2k+1 at k + (pad_l+1)/2.
            deinterleave2(
                src, w, de + i * qw_ + p_.pad_l / 2,
                so.ilo <= i && i < so.ihi ? dodd + i * qw_ + (p_.pad_l + 1) / 2 : nullptr);
          }
          continue;
        }
        for (int64_t px = 0; px < sw; ++px) {
          const Span& sp = spans[py * sw + px];
          float* dst = buf + c * chan_ + (py * sw + px) * plane_;
          const int64_t x0 = px - p_.pad_l, y0 = py - p_.pad_t;
          for (int64_t i = sp.ilo; i < sp.ihi; ++i) {
            const float* src = img + (c * h + i * sh + y0) * w + x0;
            float* d = dst + i * qw_;
            if (sw == 1)
              copy_floats(d + sp.jlo, src + sp.jlo, sp.jhi - sp.jlo);
            else
              for (int64_t j = sp.jlo; j < sp.jhi; ++j) d[j] = src[j * sw];
          }
        }
      }
    }
  }

  // Block rows [b0, b1) x output rows [y0, y1) straight into NCHW (rows mode: OW whole
  // vectors), then the epilogue on what was written.
  void compute_rows(const float* buf, float* out, const float* residual, int64_t n, int64_t g,
                    int64_t b0, int64_t b1, int64_t y0, int64_t y1) const {
    const int64_t k0 = b0 * uk_->br, k1 = b1 * uk_->br < kg_ ? b1 * uk_->br : kg_;
    const int64_t ow = p_.ow();
    const float inf = std::numeric_limits<float>::infinity();
    float* o = out + (n * p_.k + g * kg_ + k0) * ohw_ + y0 * ow;
    for (int64_t j = 0; j < nchunks_; ++j) {  // chunk-outer: its input rows stay in L1
      const ukernel::F32SpmmPacked& pk = packs_[static_cast<size_t>(g * nchunks_ + j)];
      const bool last = j == nchunks_ - 1;
      uk_->rows_fn(static_cast<size_t>(y1 - y0), static_cast<size_t>(ow / uk_->lanes),
                   static_cast<size_t>(k1 - k0), buf + y0 * qw_,
                   static_cast<size_t>(qw_) * sizeof(float),
                   pk.w.data() + pk.w_off[static_cast<size_t>(b0)],
                   pk.dmap.data() + pk.d_off[static_cast<size_t>(b0)], pk.nnz.data() + b0, o,
                   static_cast<size_t>(ow), static_cast<size_t>(ohw_), last ? cmin_ : -inf,
                   last ? cmax_ : inf, j > 0);
    }
    if (!post_epilogue_) return;
    for (int64_t k = k0; k < k1; ++k) {
      const int64_t off = (n * p_.k + g * kg_ + k) * ohw_ + y0 * ow;
      apply_epilogue(isa_, p_.epilogue, static_cast<size_t>((y1 - y0) * ow), out + off, 0.f,
                     residual ? residual + off : nullptr);
    }
  }

  // Block rows [b0, b1) x wide pixels [q0, q1) into the wide scratch, then the valid
  // columns into NCHW and the epilogue on the (contiguous) outputs they cover.
  void compute_wide(const float* buf, float* wide, float* out, const float* residual, int64_t n,
                    int64_t g, int64_t b0, int64_t b1, int64_t q0, int64_t q1) const {
    const int64_t k0 = b0 * uk_->br, k1 = b1 * uk_->br < kg_ ? b1 * uk_->br : kg_;
    const float inf = std::numeric_limits<float>::infinity();
    for (int64_t j = 0; j < nchunks_; ++j) {  // chunk-outer: its input rows stay in L1
      const ukernel::F32SpmmPacked& pk = packs_[static_cast<size_t>(g * nchunks_ + j)];
      const bool last = j == nchunks_ - 1;
      uk_->fn(static_cast<size_t>(q1 - q0), static_cast<size_t>(k1 - k0), buf + q0, 0,
              pk.w.data() + pk.w_off[static_cast<size_t>(b0)],
              pk.dmap.data() + pk.d_off[static_cast<size_t>(b0)], pk.nnz.data() + b0,
              wide + k0 * wide_ + q0, static_cast<size_t>(wide_), last ? cmin_ : -inf,
              last ? cmax_ : inf, j > 0);
    }
    const int64_t ow = p_.ow();
    auto out_index = [&](int64_t q) {  // first output at or after wide pixel q
      const int64_t oy = q / qw_, ox = q - oy * qw_;
      return oy * ow + (ox < ow ? ox : ow);
    };
    const int64_t qv = q1 < grid_ ? q1 : grid_;  // [grid_, wide_) is vector padding
    const int64_t o0 = out_index(q0), o1 = out_index(qv);
    for (int64_t k = k0; k < k1; ++k) {
      const float* src = wide + k * wide_;
      float* dst = out + (n * p_.k + g * kg_ + k) * ohw_;
      for (int64_t oy = q0 / qw_; oy * qw_ < qv; ++oy) {
        const int64_t a = q0 - oy * qw_ > 0 ? q0 - oy * qw_ : 0;
        const int64_t b = qv - oy * qw_ < ow ? qv - oy * qw_ : ow;
        if (b > a) copy_floats(dst + oy * ow + a, src + oy * qw_ + a, b - a);
      }
      if (post_epilogue_ && o1 > o0) {
        const int64_t off = (n * p_.k + g * kg_ + k) * ohw_ + o0;
        apply_epilogue(isa_, p_.epilogue, static_cast<size_t>(o1 - o0), out + off, 0.f,
                       residual ? residual + off : nullptr);
      }
    }
  }

  // sparse-spatial-pack: block rows [b0, b1) of one VH x VW tile, chunk-outer (a chunk's
  // input rows stay in L1 for every block row) into the thread's tile sums tb, then each
  // tile transposed into NCHW with the residual and the activation.
  void compute_spatial(const float* buf, float* tb, float* out, const float* residual, int64_t n,
                       int64_t g, int64_t b0, int64_t b1, int64_t tile) const {
    const int64_t oy0 = tile / tw_ * vh_, ox0 = tile % tw_ * vw_;
    const float* base = buf + oy0 * qw_ + ox0;
    const size_t rs = static_cast<size_t>(qw_) * sizeof(float);
    const int64_t tf = vc_ * vh_ * vw_;
    const float inf = std::numeric_limits<float>::infinity();
    for (int64_t j = 0; j < nchunks_; ++j) {
      const ukernel::F32SpmmPacked& pk = packs_[static_cast<size_t>(g * nchunks_ + j)];
      const bool last = j == nchunks_ - 1;
      for (int64_t b = b0; b < b1; ++b) {
        const size_t bi = static_cast<size_t>(b);
        sk_(pk.nnz[bi], base, rs, pk.w.data() + pk.w_off[bi], pk.dmap.data() + pk.d_off[bi],
            tb + b * tf, last ? cmin_ : -inf, last ? cmax_ : inf, j > 0, last);
      }
    }
    const int64_t oh = p_.oh(), ow = p_.ow();
    const int64_t rows = oh - oy0 < vh_ ? oh - oy0 : vh_, cols = ow - ox0 < vw_ ? ow - ox0 : vw_;
    const Epilogue& e = p_.epilogue;
    const bool add_clamp = residual && e.is_clamp();  // else post_epilogue_: the full epilogue
    const float lo = e.is_clamp() ? e.clamp_min() : -inf, hi = e.is_clamp() ? e.clamp_max() : inf;
    // Plain copies of whole tile rows (the common case) take a fixed-size path: the
    // per-row loop overhead dominated this step on 4-wide tiles.
    const bool plain = !add_clamp && !post_epilogue_ && cols == vw_;
    for (int64_t b = b0; b < b1; ++b) {
      const float* t = tb + b * tf;
      const int64_t lanes = kg_ - b * vc_ < vc_ ? kg_ - b * vc_ : vc_;
      float* dst0 = out + (n * p_.k + g * kg_ + b * vc_) * ohw_ + oy0 * ow + ox0;
      if (plain) {
        for (int64_t l = 0; l < lanes; ++l)
          for (int64_t i = 0; i < rows; ++i) {
            float* dst = dst0 + l * ohw_ + i * ow;
            const float* src = t + (l * vh_ + i) * vw_;
            switch (vw_) {
              case 8:
                __builtin_memcpy(dst, src, 32);
                break;
              case 4:
                __builtin_memcpy(dst, src, 16);
                break;
              case 6:
                __builtin_memcpy(dst, src, 24);
                break;
              default:
                __builtin_memcpy(dst, src, 8);
                break;
            }
          }
        continue;
      }
      for (int64_t l = 0; l < lanes; ++l) {
        const int64_t off = (n * p_.k + g * kg_ + b * vc_ + l) * ohw_ + oy0 * ow + ox0;
        for (int64_t i = 0; i < rows; ++i) {
          float* dst = out + off + i * ow;
          const float* src = t + (l * vh_ + i) * vw_;  // channel-major tile
          const float* res = residual ? residual + off + i * ow : nullptr;
          if (add_clamp) {
            for (int64_t x = 0; x < cols; ++x) {
              float v = src[x] + res[x];
              v = v < lo ? lo : v;
              dst[x] = v > hi ? hi : v;
            }
          } else {
            copy_floats(dst, src, cols);
            if (post_epilogue_) apply_epilogue(isa_, e, static_cast<size_t>(cols), dst, 0.f, res);
          }
        }
      }
    }
  }

  // First block row of thread t's share when `threads` split group g's block rows with
  // equal nonzero blocks (+1 per row for its bias and store); balanced_row(threads) = all.
  int64_t balanced_row(int64_t g, int64_t threads, int64_t t) const {
    const auto& d = costs_[static_cast<size_t>(g)];  // cumulative, over the chunks
    const int64_t nbr = block_rows();
    if (t >= threads) return nbr;
    const int64_t target = d[static_cast<size_t>(nbr)] * t / threads;
    int64_t b = 0;
    while (b < nbr && d[static_cast<size_t>(b)] < target) ++b;
    return b;
  }

  // Block rows [b0, b1) x pixels [q0, q1) of the B block at pixel p0 (ncols pixels) of
  // image n, group g; then the epilogue on what was written.
  void compute(const float* in, const float* buf, float* out, const float* residual, int64_t n,
               int64_t g, int64_t p0, int64_t ncols, int64_t b0, int64_t b1, int64_t q0,
               int64_t q1) const {
    const ukernel::F32SpmmPacked& pk = packs_[static_cast<size_t>(g)];
    const float* bsrc = direct_ ? in + (n * p_.c + g * cg_) * p_.h * p_.w + p0 : buf;
    const int64_t k0 = b0 * uk_->br, k1 = b1 * uk_->br < kg_ ? b1 * uk_->br : kg_;
    float* out_g = out + (n * p_.k + g * kg_) * ohw_ + p0;
    uk_->fn(static_cast<size_t>(q1 - q0), static_cast<size_t>(k1 - k0), bsrc + q0, in_stride_bytes_,
            pk.w.data() + pk.w_off[static_cast<size_t>(b0)],
            pk.dmap.data() + pk.d_off[static_cast<size_t>(b0)], pk.nnz.data() + b0,
            out_g + k0 * ohw_ + q0, static_cast<size_t>(ohw_), cmin_, cmax_, false);
    if (!post_epilogue_) return;
    for (int64_t k = k0; k < k1; ++k) {
      const int64_t off = (n * p_.k + g * kg_ + k) * ohw_ + p0 + q0;
      apply_epilogue(isa_, p_.epilogue, static_cast<size_t>(q1 - q0), out + off, 0.f,
                     residual ? residual + off : nullptr);
    }
  }

  // im2col of reduction rows [r0, r1) of the pixel block [p0, p0 + ncols) of image n,
  // group g into buf[r][nc_] (row r at buf + r * nc_), one output-row segment at a time.
  void pack(const float* in, int64_t n, int64_t g, int64_t p0, int64_t ncols, int64_t r0,
            int64_t r1, float* buf) const {
    const int64_t ow = p_.ow(), sh = p_.stride_h, sw = p_.stride_w, h = p_.h, w = p_.w;
    const float* img = in + (n * p_.c + g * cg_) * h * w;
    const int64_t oy_first = p0 / ow, ox_first = p0 % ow;  // no divisions per segment
    for (int64_t r = r0; r < r1; ++r) {
      const RowTap& tap = taps_[static_cast<size_t>(r)];
      const float* src = img + tap.chan_off;
      float* dst = buf + r * nc_ - p0;  // dst[q] is pixel q
      // ix = ox * sw + dx in [0, w)  <=>  ox in [lo_all, hi_all)
      const int64_t lo_all = tap.dx >= 0 ? 0 : div_up(-tap.dx, sw);
      const int64_t hi_all = w - tap.dx <= 0 ? 0 : div_up(w - tap.dx, sw);
      int64_t oy = oy_first, ox0 = ox_first;
      for (int64_t q = p0; q < p0 + ncols; ++oy, ox0 = 0) {
        const int64_t ox1 = ox0 + (p0 + ncols - q) < ow ? ox0 + (p0 + ncols - q) : ow;
        float* d = dst + q - ox0;  // d[ox] is pixel (oy, ox)
        const int64_t iy = oy * sh + tap.dy;
        if (iy < 0 || iy >= h) {
          for (int64_t ox = ox0; ox < ox1; ++ox) d[ox] = 0.f;
        } else {
          int64_t lo = lo_all < ox0 ? ox0 : lo_all;
          int64_t hi = hi_all > ox1 ? ox1 : hi_all;
          if (hi < lo) hi = lo;
          const float* s = src + iy * w + tap.dx;
          int64_t ox = ox0;
          for (; ox < lo; ++ox) d[ox] = 0.f;
          if (sw == 1) {
            copy_floats(d + ox, s + ox, hi - ox);
            ox = hi;
          } else {
            for (; ox < hi; ++ox) d[ox] = s[ox * sw];
          }
          for (; ox < ox1; ++ox) d[ox] = 0.f;
        }
        q += ox1 - ox0;
      }
    }
  }

  ConvProblem p_;
  Isa isa_;
  SparseSplit split_;
  bool direct_, implicit_, post_epilogue_ = false;
  const ukernel::F32SpmmUkernel* uk_ = nullptr;
  int64_t kg_, cg_, r_, ohw_, nc_;
  // implicit: phase planes; the OH x QW grid, rounded up to whole vectors
  int64_t qh_ = 0, qw_ = 0, plane_ = 0, chan_ = 0, grid_ = 0, wide_ = 0;
  size_t in_stride_bytes_ = 0;
  float cmin_, cmax_;
  std::vector<ukernel::F32SpmmPacked> packs_;  // [group][reduction chunk]
  std::vector<std::vector<int64_t>> costs_;    // per group: cumulative blocks + rows per row
  // Reduction chunks (implicit; else one): kc_ input channels each.
  int64_t kc_ = 0, nchunks_ = 1, slack_ = 0, br_ = 1;
  // implicit spmm with OW a multiple of the lanes: output rows straight into NCHW.
  bool rows_mode_ = false;
  // sparse-spatial-pack: VC x 1 blocks, VH x VW tiles, th_ x tw_ of them.
  bool spatial_ = false;
  ukernel::F32SspackFn sk_ = nullptr;
  int64_t vc_ = 0, vh_ = 0, vw_ = 0, th_ = 0, tw_ = 0;
  std::vector<RowTap> taps_;
};

}  // namespace

KnobSpec sparse_format_knob() {
  return {"format",
          {0, 1, 2, 3, 4},
          "weight format: 0 auto (a BRx1 block shape whose blocks are >= 80% nonzero, else csr), "
          "1 csr, 2 bsr4x1, 3 bsr8x1, 4 bsr1x4 (output channels x reduction)",
          {"auto", "csr", "bsr4x1", "bsr8x1", "bsr1x4"}};
}

KnobSpec sparse_chunk_knob() {
  return {"kc",
          {0, 16, 32, 64, 128, 1 << 20},
          "input channels per reduction chunk: 0 auto (a tile's input rows stay in L1 while "
          "every block row walks them; >= 32 stored blocks per row and chunk); >= C: one chunk"};
}

KnobSpec sparse_vecs_knob() {
  return {"vecs",
          {1, 2, 4, 8},
          "pixel vectors per microkernel tile (MR = vecs x lanes; capped by the block shape's "
          "register budget)"};
}

int64_t sparse_spatial_vc(Isa isa, const ConvProblem& p, const float* w) {
  // 16 channels (one zmm) only when 16x1 blocks are as full as 8x1 would be; else 8 (one
  // ymm: the bp:8x1 shape; with AVX-512VL's 32 registers on AVX-512).
  if (isa == Isa::kAvx512 && block_fill(p, w, 16) >= 0.8) return 16;
  return 8;
}

SparseBlock sparse_block_for(int64_t format, const ConvProblem& p, const float* w) {
  DLAS_CHECK(format >= 0 && format < 5, ErrorKind::kInvalidInput, "knob 'format' = ", format,
             " is out of range");
  if (format != 0) return kFormatBlocks[format];
  // BRx1 blocks load each input vector once for BR FMAs; on Zen3's three load ports that
  // pays only when few of the block's FMAs are on zeros (CSR is then FMA-bound already).
  if (block_fill(p, w, 8) >= 0.8) return {8, 1};
  if (block_fill(p, w, 4) >= 0.8) return {4, 1};
  return {1, 1};
}

std::unique_ptr<PreparedConv> prepare_sparse_conv(const ConvProblem& p, const float* w,
                                                  const float* bias, const SparseConvConfig& c,
                                                  Isa isa) {
  return std::make_unique<PreparedSparseConv>(p, w, bias, c, isa);
}

}  // namespace dlas::conv_detail

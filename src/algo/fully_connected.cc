#include "dlas/algo/fully_connected.h"

#include <algorithm>
#include <limits>

#include "algo/microkernels/f32-gemm/f32_gemm.h"
#include "dlas/core/error.h"
#include "dlas/hw/thread_pool.h"

namespace dlas {
namespace {

int64_t div_up(int64_t a, int64_t b) { return (a + b - 1) / b; }
int64_t gcd(int64_t a, int64_t b) { return b ? gcd(b, a % b) : a; }
// Reduction rows per microkernel call: a K x NR sub-panel slice of 512 rows (32 KiB for
// NR = 16) stays in L1/L2 while the MR-row panels of x stream over it.
constexpr int64_t kKc = 512;
// Up to this many rows the GEMV kernel runs once per row (W streamed m times); beyond,
// the MR-row kernel streams W once per MR rows.
constexpr int64_t kGemvRows = 2;

}  // namespace

PreparedFullyConnected::PreparedFullyConnected(int64_t k, int64_t n, const float* w, bool w_is_nk,
                                               const float* bias, const Epilogue& epilogue, Isa isa,
                                               int64_t rows)
    : k_(k), n_(n), isa_(isa), epilogue_(epilogue) {
  DLAS_CHECK(k > 0 && n > 0, ErrorKind::kInvalidInput, "fully connected: k and n must be positive");
  gemm_ = &ukernel::f32_gemm_default(isa);
  if (rows > kGemvRows) gemm_ = &ukernel::f32_gemm_for_output(isa, rows, n);
  gemv_ = gemm_;
  // Layers known to run more rows than the GEMV serves (a Linear layer on channels-last
  // activations) keep W in the GEMM kernel's own NR-wide panels: each column slice is then
  // one contiguous stream, not every fourth 128-byte run of a panel shared with the GEMV
  // kernel (convnext_tiny in f32: 0.92x its time, AMD EPYC Zen 5, 2 threads).
  if (rows <= kGemvRows)
    for (const ukernel::F32GemmUkernel* u : ukernel::f32_gemm_ukernels_for(isa))
      if (u->mr == 1) {
        gemv_ = u;
        break;
      }
  // An output far narrower than the GEMV kernel runs dot products at batch 1 (the kernel
  // reads its whole NR-wide row per k: mobilenetv2-cifar's 1280 -> 10 classifier streamed
  // 655 KB for 51 KB of weights, 7 us of the model's 0.53 ms; AMD EPYC Zen 5, 2 threads).
  if (gemv_ != gemm_ && n * 4 <= gemv_->nr) {
    wnarrow_.resize(static_cast<size_t>(n * k));
    for (int64_t j = 0; j < n; ++j)
      for (int64_t kk = 0; kk < k; ++kk)
        wnarrow_[static_cast<size_t>(j * k + kk)] = w_is_nk ? w[j * k + kk] : w[kk * n + j];
  }
  // One packing serves both kernels: panels as wide as lcm(NR_gemv, NR_gemm), each kernel
  // addressing an NR-wide slice of a panel through the row offset table (stride = panel);
  // the GEMM kernel's alone where the dot products replace the GEMV kernel.
  panel_ = wnarrow_.empty() ? gemv_->nr / gcd(gemv_->nr, gemm_->nr) * gemm_->nr : gemm_->nr;
  npanels_ = div_up(n, panel_);
  wpack_.assign(static_cast<size_t>(npanels_ * k * panel_), 0.f);
  for (int64_t p = 0; p < npanels_; ++p)
    for (int64_t kk = 0; kk < k; ++kk)
      for (int64_t j = 0; j < panel_ && p * panel_ + j < n; ++j) {
        const int64_t col = p * panel_ + j;
        wpack_[(p * k + kk) * panel_ + j] = w_is_nk ? w[col * k + kk] : w[kk * n + col];
      }
  bias_.assign(static_cast<size_t>(n), 0.f);
  if (bias)
    for (int64_t j = 0; j < n; ++j) bias_[j] = bias[j];
  for (int64_t kk = 0; kk < k; ++kk) row_off_.push_back(kk * panel_);
}

const char* PreparedFullyConnected::ukernel_name(int64_t m) const {
  if (m <= kGemvRows && !wnarrow_.empty()) return "dot";
  return (m <= kGemvRows && gemv_ != gemm_ ? gemv_ : gemm_)->name;
}

size_t PreparedFullyConnected::workspace_bytes(int64_t m, int) const {
  if (m <= kGemvRows && gemv_ != gemm_) return 0;  // GEMV or dot products: x read as is
  return static_cast<size_t>(div_up(m, gemm_->mr) * gemm_->mr * k_) * sizeof(float);
}

void PreparedFullyConnected::run(int64_t m, const float* x, float* y, const float* residual,
                                 void* workspace, ThreadPool& pool) const {
  const bool clamp = epilogue_.is_clamp();
  const float inf = std::numeric_limits<float>::infinity();
  const float cmin = clamp ? epilogue_.clamp_min() : -inf;
  const float cmax = clamp ? epilogue_.clamp_max() : inf;
  if (m <= kGemvRows && !wnarrow_.empty()) {
    // One thread: 12,800 MACs for a 1280 -> 10 classifier, less than a parallel loop's
    // hand-off. Four 4-lane partial sums (the baseline ISA: no kernel to pick).
    typedef float v4 __attribute__((vector_size(16)));
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t j = 0; j < n_; ++j) {
        const float* xr = x + i * k_;
        const float* wr = wnarrow_.data() + j * k_;
        v4 s[4] = {};
        int64_t kk = 0;
        for (; kk + 16 <= k_; kk += 16)
          for (int q = 0; q < 4; ++q) {
            v4 xv, wv;
            __builtin_memcpy(&xv, xr + kk + 4 * q, sizeof(v4));
            __builtin_memcpy(&wv, wr + kk + 4 * q, sizeof(v4));
            s[q] += xv * wv;
          }
        const v4 t = (s[0] + s[1]) + (s[2] + s[3]);
        float sum = (t[0] + t[1]) + (t[2] + t[3]);
        for (; kk < k_; ++kk) sum += xr[kk] * wr[kk];
        float& out = y[i * n_ + j];
        out = bias_[j] + (residual ? residual[i * n_ + j] : 0.f);
        out += sum;
        if (clamp) out = out < cmin ? cmin : (out > cmax ? cmax : out);
      }
      if (!clamp)
        apply_epilogue(isa_, epilogue_, static_cast<size_t>(n_), y + i * n_, 0.f, nullptr);
    }
  } else {
    run_packed(m, x, y, residual, workspace, pool, cmin, cmax);
  }
}

void PreparedFullyConnected::run_packed(int64_t m, const float* x, float* y, const float* residual,
                                        void* workspace, ThreadPool& pool, float cmin,
                                        float cmax) const {
  const int64_t threads = pool.threads();
  const float inf = std::numeric_limits<float>::infinity();
  const bool clamp = epilogue_.is_clamp();
  const bool use_gemv = m <= kGemvRows && gemv_ != gemm_;
  const ukernel::F32GemmUkernel& u = use_gemv ? *gemv_ : *gemm_;
  const int64_t nr = u.nr, mr = u.mr;
  const int64_t cols = div_up(n_, nr);  // NR-wide column slices
  const int64_t rpanels = use_gemv ? m : div_up(m, mr);
  // Rows [row0, row0 + rows) start as bias (+ residual) over columns [col0, col0 + ncols);
  // every microkernel call accumulates, so the clamp fuses into the last k block even with a
  // residual.
  auto init = [&](int64_t row0, int64_t rows, int64_t col0, int64_t ncols) {
    for (int64_t i = 0; i < rows; ++i) {
      float* c = y + (row0 + i) * n_ + col0;
      const float* r = residual ? residual + (row0 + i) * n_ + col0 : nullptr;
      for (int64_t j = 0; j < ncols; ++j) c[j] = bias_[col0 + j] + (r ? r[j] : 0.f);
    }
  };
  // One tile: the MR (or 1) rows of packed panel a against column slice jc, all of k.
  auto tile = [&](const float* a, int64_t row0, int64_t rows, int64_t jc) {
    const int64_t col0 = jc * nr, p = col0 / panel_, jin = col0 % panel_;
    const int64_t ncols = n_ - col0 < nr ? n_ - col0 : nr;
    for (int64_t k0 = 0; k0 < k_; k0 += kKc) {
      const int64_t kb = k_ - k0 < kKc ? k_ - k0 : kKc;
      const bool last = k0 + kb == k_;
      u.fn(static_cast<size_t>(rows), static_cast<size_t>(ncols), static_cast<size_t>(kb),
           a + k0 * (use_gemv ? 1 : mr), wpack_.data() + (p * k_ + k0) * panel_ + jin,
           row_off_.data(), y + row0 * n_ + col0, static_cast<size_t>(n_), nullptr, true,
           last ? cmin : -inf, last ? cmax : inf);
    }
  };
  const float* a = x;  // MR = 1: a row of x is already a packed panel
  if (!use_gemv) {
    float* packed = static_cast<float*>(workspace);
    pool.parallel_for(static_cast<size_t>(threads), [&](size_t t) {
      for (int64_t ip = rpanels * static_cast<int64_t>(t) / threads;
           ip < rpanels * (static_cast<int64_t>(t) + 1) / threads; ++ip) {
        const int64_t rows = m - ip * mr < mr ? m - ip * mr : mr;
        u.pack(static_cast<size_t>(mr), static_cast<size_t>(rows), static_cast<size_t>(k_),
               x + ip * mr * k_, static_cast<size_t>(k_), packed + ip * mr * k_);
      }
    });
    a = packed;
  }
  const int64_t a_stride = use_gemv ? k_ : mr * k_;
  const int64_t tasks = cols * rpanels;
  pool.parallel_for(static_cast<size_t>(threads), [&](size_t t) {
    // Column-slice major: each thread streams its own part of W once (row-panel major, each
    // thread streaming all of W in L2-sized chunks, ran ConvNeXt-tiny's Linear layers 1.2-2x
    // slower on a Zen 5: twice the weight traffic). The tile's activation runs while it is
    // in L1.
    for (int64_t it = tasks * static_cast<int64_t>(t) / threads;
         it < tasks * (static_cast<int64_t>(t) + 1) / threads; ++it) {
      const int64_t jc = it / rpanels, ip = it % rpanels;
      const int64_t row0 = ip * (use_gemv ? 1 : mr);
      const int64_t rows = use_gemv ? 1 : (m - row0 < mr ? m - row0 : mr);
      const int64_t col0 = jc * nr, ncols = n_ - col0 < nr ? n_ - col0 : nr;
      init(row0, rows, col0, ncols);
      tile(a + ip * a_stride, row0, rows, jc);
      if (!clamp)
        for (int64_t i = 0; i < rows; ++i)
          apply_epilogue(isa_, epilogue_, static_cast<size_t>(ncols), y + (row0 + i) * n_ + col0,
                         0.f, nullptr);
    }
  });
}

}  // namespace dlas

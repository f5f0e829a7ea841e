// Fully-connected layers on bf16 values with the native bf16 GEMM microkernels (h16-gemm:
// vdpbf16ps tiles of f32 accumulators). The GEMM's A operand is x (MR rows of the layer's
// rows, packed per block into pair-interleaved panels at run time), B the weights (NR output
// columns per panel, k in pairs, packed once and kept bf16): the same tiles the bf16 gemm
// conv runs with the roles of weights and activations swapped, since a Linear layer on
// channels-last activations has its reduction axis innermost in x. Each tile's f32 sums get
// the bias and are rounded once to bf16 (h16-vcvt).
#include <algorithm>
#include <cstring>

#include "algo/microkernels/h16-gemm/h16_gemm.h"
#include "algo/microkernels/h16-vcvt/h16_vcvt.h"
#include "dlas/algo/fully_connected.h"
#include "dlas/core/error.h"
#include "dlas/hw/thread_pool.h"

namespace dlas {
namespace {

// The first vector kernel of the path (kblock == kp: no AMX tile configuration).
const ukernel::H16GemmUkernel* bf16_fc_ukernel(Isa isa) {
  for (const ukernel::H16GemmUkernel* u : ukernel::h16_gemm_ukernels_for(DType::kBF16, isa))
    if (u->kblock == u->kp) return u;
  return nullptr;
}

const ukernel::H16GemmUkernel& uk_of(const void* p) {
  return *static_cast<const ukernel::H16GemmUkernel*>(p);
}

}  // namespace

bool PreparedFullyConnectedBf16::available(Isa isa) { return bf16_fc_ukernel(isa) != nullptr; }

PreparedFullyConnectedBf16::PreparedFullyConnectedBf16(int64_t k, int64_t n, const uint16_t* w,
                                                       bool w_is_nk, const float* bias,
                                                       const Epilogue& epilogue, Isa isa)
    : k_(k), n_(n), isa_(isa), epilogue_(epilogue), uk_(bf16_fc_ukernel(isa)) {
  DLAS_CHECK(!epilogue.residual, ErrorKind::kInvalidInput,
             "bf16 fully connected: no residual epilogue");
  DLAS_CHECK(uk_ != nullptr, ErrorKind::kUnsupported, "bf16 fully connected: the ", isa_name(isa),
             " path has no bf16 GEMM microkernel");
  DLAS_CHECK(k > 0 && n > 0, ErrorKind::kInvalidInput, "bf16 fully connected: empty weights");
  const ukernel::H16GemmUkernel& uk = uk_of(uk_);
  const int64_t kp = uk.kp, nr = uk.nr;
  kpad_ = (k + kp - 1) / kp * kp;
  npanels_ = (n + nr - 1) / nr;
  // Panel p: b[(kk / kp) * NR * kp + j * kp + kk % kp] = W[kk][p * NR + j], zero padded.
  wpack_.assign(static_cast<size_t>(npanels_ * nr * kpad_), 0);
  for (int64_t p = 0; p < npanels_; ++p) {
    uint16_t* b = wpack_.data() + p * nr * kpad_;
    for (int64_t j = 0; j < nr && p * nr + j < n; ++j) {
      const int64_t col = p * nr + j;
      for (int64_t kk = 0; kk < k; ++kk)
        b[(kk / kp) * nr * kp + j * kp + kk % kp] = w_is_nk ? w[col * k + kk] : w[kk * n + col];
    }
  }
  bias_.assign(static_cast<size_t>(n), 0.f);
  if (bias) std::copy(bias, bias + n, bias_.begin());
}

int64_t PreparedFullyConnectedBf16::min_rows(Isa isa) {
  const ukernel::H16GemmUkernel* u = bf16_fc_ukernel(isa);
  return u ? u->mr : 0;
}

const char* PreparedFullyConnectedBf16::ukernel_name() const { return uk_of(uk_).name; }

void PreparedFullyConnectedBf16::run(int64_t m, const uint16_t* x, uint16_t* y,
                                     ThreadPool& pool) const {
  const ukernel::H16GemmUkernel& uk = uk_of(uk_);
  const ukernel::H16Vcvt& cvt = ukernel::h16_vcvt_for(DType::kBF16, isa_);
  const int64_t mr = uk.mr, nr = uk.nr;
  const int64_t mblocks = (m + mr - 1) / mr;
  // Items: one row block against a run of panels; runs split only where the row blocks
  // alone would leave threads idle.
  const int64_t want = 4 * static_cast<int64_t>(pool.threads());
  const int64_t groups = std::clamp<int64_t>((want + mblocks - 1) / mblocks, 1, npanels_);
  pool.parallel_for(static_cast<size_t>(mblocks * groups), [&](size_t item) {
    const int64_t mb = static_cast<int64_t>(item) / groups, g = static_cast<int64_t>(item) % groups;
    const int64_t r0 = mb * mr, rows = std::min(mr, m - r0);
    const int64_t p0 = npanels_ * g / groups, p1 = npanels_ * (g + 1) / groups;
    static thread_local std::vector<uint16_t> apanel;
    static thread_local std::vector<float> crows;
    apanel.assign(static_cast<size_t>(mr * kpad_), 0);
    // The block's f32 sums for the item's columns, row-major: each row gets its bias and is
    // rounded in one pass over its columns, not once per panel.
    const int64_t c_begin = p0 * nr, c_end = std::min(p1 * nr, n_), width = p1 * nr - c_begin;
    if (crows.size() < static_cast<size_t>(mr * width))
      crows.resize(static_cast<size_t>(mr * width));
    uk.pack(static_cast<size_t>(mr), static_cast<size_t>(rows), static_cast<size_t>(k_),
            x + r0 * k_, static_cast<size_t>(k_), apanel.data());
    for (int64_t p = p0; p < p1; ++p) {
      const int64_t c0 = p * nr, cols = std::min(nr, n_ - c0);
      uk.fn(static_cast<size_t>(rows), static_cast<size_t>(cols), static_cast<size_t>(kpad_),
            apanel.data(), wpack_.data() + p * nr * kpad_, 0, crows.data() + (c0 - c_begin),
            static_cast<size_t>(width), false);
    }
    const float* bias = bias_.data() + c_begin;
    for (int64_t i = 0; i < rows; ++i) {
      float* c = crows.data() + i * width;
      for (int64_t j = 0; j < c_end - c_begin; ++j) c[j] += bias[j];
      if (epilogue_.act != Activation::kNone)
        apply_epilogue(isa_, epilogue_, static_cast<size_t>(c_end - c_begin), c, 0.f, nullptr);
      cvt.narrow(static_cast<size_t>(c_end - c_begin), c, y + (r0 + i) * n_ + c_begin);
    }
  });
}

}  // namespace dlas

#include <algorithm>
#include <limits>

#include "algo/microkernels/f32-gemm/f32_gemm.h"
#include "dlas/algo/matmul.h"
#include "dlas/core/error.h"
#include "dlas/hw/thread_pool.h"

namespace dlas {
namespace {

int64_t div_up(int64_t a, int64_t b) { return (a + b - 1) / b; }

// The broadcast leading dimensions of a [..., M, K] and b [..., K, N], or false.
bool batch_dims(const Shape& a, const Shape& b, Shape* out) {
  const size_t ra = a.size() - 2, rb = b.size() - 2, r = std::max(ra, rb);
  out->assign(r, 1);
  for (size_t i = 0; i < r; ++i) {
    const int64_t da = i + ra >= r ? a[i + ra - r] : 1;
    const int64_t db = i + rb >= r ? b[i + rb - r] : 1;
    if (da != db && da != 1 && db != 1) return false;
    (*out)[i] = std::max(da, db);
  }
  return true;
}

// Element offsets of each output batch's matrix in an operand of shape s ([..., R, C]).
std::vector<int64_t> batch_offsets(const Shape& s, const Shape& dims) {
  const size_t r = dims.size(), rs = s.size() - 2;
  std::vector<int64_t> stride(r, 0);
  int64_t st = s[s.size() - 2] * s.back();
  for (size_t i = r; i-- > 0;) {
    const int64_t d = i + rs >= r ? s[i + rs - r] : 1;
    stride[i] = d == 1 ? 0 : st;
    st *= d;
  }
  int64_t total = 1;
  for (int64_t d : dims) total *= d;
  std::vector<int64_t> off(static_cast<size_t>(total), 0), idx(r, 0);
  for (int64_t t = 0; t < total; ++t) {
    int64_t o = 0;
    for (size_t i = 0; i < r; ++i) o += idx[i] * stride[i];
    off[static_cast<size_t>(t)] = o;
    for (size_t i = r; i-- > 0;) {
      if (++idx[i] < dims[i]) break;
      idx[i] = 0;
    }
  }
  return off;
}

}  // namespace

bool BatchedMatMul::supports(const Shape& a, const Shape& b) {
  Shape dims;
  if (a.size() < 2 || b.size() < 2 || a.back() != b[b.size() - 2]) return false;
  for (int64_t d : a)
    if (d < 1) return false;
  for (int64_t d : b)
    if (d < 1) return false;
  return batch_dims(a, b, &dims);
}

BatchedMatMul::BatchedMatMul(const Shape& a, const Shape& b, Isa isa)
    : m_(0), k_(0), n_(0), npanels_(0), u_(nullptr) {
  Shape dims;
  DLAS_CHECK(supports(a, b), ErrorKind::kInvalidInput, "matmul: cannot multiply ", shape_str(a),
             " by ", shape_str(b));
  batch_dims(a, b, &dims);
  m_ = a[a.size() - 2];
  k_ = a.back();
  n_ = b.back();
  u_ = &ukernel::f32_gemm_for_output(isa, m_, n_);
  npanels_ = div_up(n_, u_->nr);
  a_off_ = batch_offsets(a, dims);
  b_off_ = batch_offsets(b, dims);
  for (int64_t kk = 0; kk < k_; ++kk) row_off_.push_back(kk * u_->nr);
}

const char* BatchedMatMul::ukernel_name() const { return u_->name; }

size_t BatchedMatMul::workspace_bytes(int threads) const {
  // Per thread: one batch's B in NR-column panels and one MR-row panel of A.
  const int64_t per_thread = npanels_ * u_->nr * k_ + u_->mr * k_;
  return static_cast<size_t>(per_thread * std::max(threads, 1)) * sizeof(float) +
         64 * static_cast<size_t>(std::max(threads, 1));
}

void BatchedMatMul::run(const float* a, const float* b, float* y, void* workspace,
                        ThreadPool& pool) const {
  const int64_t mr = u_->mr, nr = u_->nr;
  const int64_t rblocks = div_up(m_, mr);
  const int64_t tasks = batches() * rblocks;
  const int64_t threads = std::min<int64_t>(pool.threads(), tasks);
  const size_t per_thread =
      (static_cast<size_t>(npanels_ * nr * k_ + mr * k_) * sizeof(float) + 63) / 64 * 64;
  const float inf = std::numeric_limits<float>::infinity();
  pool.parallel_for(static_cast<size_t>(threads), [&](size_t t) {
    float* bpack = reinterpret_cast<float*>(static_cast<char*>(workspace) + t * per_thread);
    float* apack = bpack + npanels_ * nr * k_;
    int64_t packed_batch = -1;
    for (int64_t it = tasks * static_cast<int64_t>(t) / threads;
         it < tasks * (static_cast<int64_t>(t) + 1) / threads; ++it) {
      const int64_t bi = it / rblocks, ib = it % rblocks;
      if (bi != packed_batch) {  // this batch's B: [K][N] -> panels of [K][NR], zero-padded
        const float* src = b + b_off_[static_cast<size_t>(bi)];
        for (int64_t p = 0; p < npanels_; ++p) {
          const int64_t c0 = p * nr, w = std::min(nr, n_ - c0);
          float* dst = bpack + p * k_ * nr;
          for (int64_t kk = 0; kk < k_; ++kk) {
            std::copy(src + kk * n_ + c0, src + kk * n_ + c0 + w, dst + kk * nr);
            std::fill(dst + kk * nr + w, dst + (kk + 1) * nr, 0.f);
          }
        }
        packed_batch = bi;
      }
      const int64_t row0 = ib * mr, rows = std::min(mr, m_ - row0);
      u_->pack(static_cast<size_t>(mr), static_cast<size_t>(rows), static_cast<size_t>(k_),
               a + a_off_[static_cast<size_t>(bi)] + row0 * k_, static_cast<size_t>(k_), apack);
      float* c = y + (bi * m_ + row0) * n_;
      for (int64_t p = 0; p < npanels_; ++p) {
        const int64_t c0 = p * nr, w = std::min(nr, n_ - c0);
        u_->fn(static_cast<size_t>(rows), static_cast<size_t>(w), static_cast<size_t>(k_), apack,
               bpack + p * k_ * nr, row_off_.data(), c + c0, static_cast<size_t>(n_), nullptr,
               false, -inf, inf);
      }
    }
  });
}

}  // namespace dlas

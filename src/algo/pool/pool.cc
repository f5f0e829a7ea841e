// Pooling entry points: validation, ISA dispatch, and the split over planes.
#include <algorithm>

#include <vector>

#include "algo/microkernels/f32-pool/f32_pool.h"
#include "algo/microkernels/f32-poolnchwc/f32_poolnchwc.h"
#include "algo/microkernels/h16-vblock/h16_vblock.h"
#include "algo/microkernels/h16-vcvt/h16_vcvt.h"
#include "dlas/algo/layout.h"
#include "dlas/core/error.h"
#include "dlas/hw/thread_pool.h"

namespace dlas {

void PoolProblem::validate() const {
  DLAS_CHECK(n > 0 && c > 0 && h > 0 && w > 0 && kh > 0 && kw > 0 && oh > 0 && ow > 0,
             ErrorKind::kInvalidInput, "pool: sizes, kernel and output size must be positive");
  DLAS_CHECK(stride_h > 0 && stride_w > 0 && dil_h > 0 && dil_w > 0, ErrorKind::kInvalidInput,
             "pool: strides and dilations must be positive");
  DLAS_CHECK(pad_t >= 0 && pad_l >= 0 && pad_b >= 0 && pad_r >= 0, ErrorKind::kInvalidInput,
             "pool: pads must be non-negative");
}

namespace {
int64_t out_size(int64_t in, int64_t k, int64_t s, int64_t pb, int64_t pe, int64_t d,
                 bool ceil_mode) {
  const int64_t span = in + pb + pe - d * (k - 1) - 1;
  if (span < 0) return 0;
  int64_t o = (ceil_mode ? (span + s - 1) / s : span / s) + 1;
  // ceil_mode: drop a last window that would start in the end padding.
  if (ceil_mode && (o - 1) * s >= in + pb) --o;
  return o;
}

// Splits `planes` into about 4 chunks per thread (balance without per-plane dispatch).
template <class Fn>
void for_planes(ThreadPool& pool, int64_t planes, Fn&& fn) {
  const int64_t chunks = std::min<int64_t>(planes, 4 * static_cast<int64_t>(pool.threads()));
  pool.parallel_for(static_cast<size_t>(chunks), [&](size_t i) {
    const int64_t b = planes * static_cast<int64_t>(i) / chunks;
    const int64_t e = planes * static_cast<int64_t>(i + 1) / chunks;
    fn(b, e);
  });
}
}  // namespace

void PoolProblem::set_output_size(bool ceil_mode) {
  oh = out_size(h, kh, stride_h, pad_t, pad_b, dil_h, ceil_mode);
  ow = out_size(w, kw, stride_w, pad_l, pad_r, dil_w, ceil_mode);
}

void max_pool(Isa isa, const PoolProblem& p, const float* x, float* y, ThreadPool& pool) {
  p.validate();
  const auto& k = ukernel::f32_pool_for(isa);
  const int64_t in = p.h * p.w, out = p.oh * p.ow;
  for_planes(pool, p.n * p.c, [&](int64_t b, int64_t e) {
    for (int64_t q = b; q < e; ++q) k.max_plane(p, x + q * in, y + q * out);
  });
}

void average_pool(Isa isa, const PoolProblem& p, bool count_include_pad, const float* x, float* y,
                  ThreadPool& pool) {
  p.validate();
  const auto& k = ukernel::f32_pool_for(isa);
  const int64_t in = p.h * p.w, out = p.oh * p.ow;
  for_planes(pool, p.n * p.c, [&](int64_t b, int64_t e) {
    for (int64_t q = b; q < e; ++q) k.avg_plane(p, count_include_pad, x + q * in, y + q * out);
  });
}

void global_average_pool(Isa isa, int64_t planes, int64_t hw, const float* x, float* y,
                         ThreadPool& pool) {
  DLAS_CHECK(planes >= 0 && hw > 0, ErrorKind::kInvalidInput,
             "global_average_pool: sizes must be positive");
  const auto& k = ukernel::f32_pool_for(isa);
  for_planes(pool, planes,
             [&](int64_t b, int64_t e) { k.gavg_planes(e - b, hw, x + b * hw, y + b); });
}

namespace {
// This thread's f32 scratch of at least n floats (grows, never shrinks).
float* h16_scratch(int slot, size_t n) {
  static thread_local std::vector<float> buf[2];
  if (buf[slot].size() < n) buf[slot].resize(n);
  return buf[slot].data();
}

// Widens planes' inputs, runs plane(xf, yf) per plane, narrows each output plane.
template <class Plane>
void h16_planes(DType type, Isa isa, int64_t planes, int64_t in, int64_t out, const uint16_t* x,
                uint16_t* y, ThreadPool& pool, Plane&& plane) {
  const auto& cvt = ukernel::h16_vcvt_for(type, isa);
  for_planes(pool, planes, [&](int64_t b, int64_t e) {
    float* xf = h16_scratch(0, static_cast<size_t>(in));
    float* yf = h16_scratch(1, static_cast<size_t>(out));
    for (int64_t q = b; q < e; ++q) {
      cvt.widen(static_cast<size_t>(in), x + q * in, xf);
      plane(xf, yf);
      cvt.narrow(static_cast<size_t>(out), yf, y + q * out);
    }
  });
}

// On AVX-512 paths: 16 channels at a time widened straight into one f32 block plane
// (h16-vblock), pooled by the blocked kernels (channels as lanes, f32-poolnchwc), narrowed
// straight back -- the NCHW plane kernels vectorise along rows, poorly on strided windows.
// Returns false where the path has no 16-lane blocks.
template <class Rows>
bool h16_blocks(DType type, Isa isa, const PoolProblem& p, const uint16_t* x, uint16_t* y,
                ThreadPool& pool, Rows rows) {
  if (native_blocked_layout(base_isa(isa)) != Layout::kNchw16c) return false;
  const ukernel::F32PoolNchwcUkernels* k = ukernel::f32_poolnchwc_for(isa, 16);
  if (!k) return false;
  const auto& vb = ukernel::h16_vblock_for(type, isa);
  const int64_t in = p.h * p.w, out = p.oh * p.ow, cb = (p.c + 15) / 16;
  for_planes(pool, p.n * cb, [&](int64_t b, int64_t e) {
    float* xf = h16_scratch(0, static_cast<size_t>(in * 16));
    float* yf = h16_scratch(1, static_cast<size_t>(out * 16));
    for (int64_t q = b; q < e; ++q) {
      const int64_t n = q / cb, c0 = q % cb * 16, ch = std::min<int64_t>(16, p.c - c0);
      vb.widen(static_cast<size_t>(in), x + (n * p.c + c0) * in, static_cast<size_t>(in),
               static_cast<size_t>(ch), xf);
      rows(*k, xf, yf);
      vb.narrow(static_cast<size_t>(out), yf, static_cast<size_t>(ch), y + (n * p.c + c0) * out,
                static_cast<size_t>(out));
    }
  });
  return true;
}
}  // namespace

void max_pool_h16(DType type, Isa isa, const PoolProblem& p, const uint16_t* x, uint16_t* y,
                  ThreadPool& pool) {
  p.validate();
  if (h16_blocks(type, isa, p, x, y, pool,
                 [&](const ukernel::F32PoolNchwcUkernels& k, const float* xf, float* yf) {
                   k.max_rows(p, xf, yf, 0, p.oh);
                 }))
    return;
  const auto& k = ukernel::f32_pool_for(isa);
  h16_planes(type, isa, p.n * p.c, p.h * p.w, p.oh * p.ow, x, y, pool,
             [&](const float* xf, float* yf) { k.max_plane(p, xf, yf); });
}

void average_pool_h16(DType type, Isa isa, const PoolProblem& p, bool count_include_pad,
                      const uint16_t* x, uint16_t* y, ThreadPool& pool) {
  p.validate();
  if (h16_blocks(type, isa, p, x, y, pool,
                 [&](const ukernel::F32PoolNchwcUkernels& k, const float* xf, float* yf) {
                   k.avg_rows(p, count_include_pad, xf, yf, 0, p.oh);
                 }))
    return;
  const auto& k = ukernel::f32_pool_for(isa);
  h16_planes(type, isa, p.n * p.c, p.h * p.w, p.oh * p.ow, x, y, pool,
             [&](const float* xf, float* yf) { k.avg_plane(p, count_include_pad, xf, yf); });
}

void global_average_pool_h16(DType type, Isa isa, int64_t planes, int64_t hw, const uint16_t* x,
                             uint16_t* y, ThreadPool& pool) {
  DLAS_CHECK(planes >= 0 && hw > 0, ErrorKind::kInvalidInput,
             "global_average_pool: sizes must be positive");
  const auto& k = ukernel::f32_pool_for(isa);
  const auto& cvt = ukernel::h16_vcvt_for(type, isa);
  // Planes in batches of about 16 KB widened (one call per batch, not three per plane: the
  // squeeze-and-excitation pools have hundreds of 7x7 to 14x14 planes).
  const int64_t batch = std::max<int64_t>(1, 4096 / hw);
  for_planes(pool, planes, [&](int64_t b, int64_t e) {
    float* xf = h16_scratch(0, static_cast<size_t>(std::min(batch, e - b) * hw));
    float* yf = h16_scratch(1, static_cast<size_t>(std::min(batch, e - b)));
    for (int64_t q = b; q < e; q += batch) {
      const int64_t n = std::min(batch, e - q);
      cvt.widen(static_cast<size_t>(n * hw), x + q * hw, xf);
      k.gavg_planes(n, hw, xf, yf);
      cvt.narrow(static_cast<size_t>(n), yf, y + q);
    }
  });
}

void global_average_pool_h16(DType type, Isa isa, Layout l, int64_t n, int64_t c, int64_t hw,
                             const uint16_t* x, uint16_t* y, ThreadPool& pool) {
  DLAS_CHECK(n > 0 && c > 0 && hw > 0, ErrorKind::kInvalidInput,
             "global_average_pool: sizes must be positive");
  const ukernel::F32PoolNchwcUkernels* k =
      is_blocked(l) ? ukernel::f32_poolnchwc_for(isa, static_cast<int>(layout_block(l))) : nullptr;
  DLAS_CHECK(k != nullptr, ErrorKind::kUnsupported, "16-bit global average pooling on ",
             layout_name(l), " needs vectors of its block, which the ", isa_name(isa),
             " path lacks");
  const auto& cvt = ukernel::h16_vcvt_for(type, isa);
  const int64_t b = k->lanes, planes = n * ((c + b - 1) / b), in = hw * b;
  // Block planes in batches of about 16 KB widened, as the NCHW twin above.
  const int64_t batch = std::max<int64_t>(1, 4096 / in);
  for_planes(pool, planes, [&](int64_t first, int64_t end) {
    float* xf = h16_scratch(0, static_cast<size_t>(std::min(batch, end - first) * in));
    float* yf = h16_scratch(1, static_cast<size_t>(std::min(batch, end - first) * b));
    for (int64_t q = first; q < end; q += batch) {
      const int64_t m = std::min(batch, end - q);
      cvt.widen(static_cast<size_t>(m * in), x + q * in, xf);
      k->gavg_planes(m, hw, xf, yf);
      cvt.narrow(static_cast<size_t>(m * b), yf, y + q * b);
    }
  });
}

}  // namespace dlas

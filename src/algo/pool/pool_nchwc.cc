// Blocked-layout pooling entry points: ISA dispatch and the split over block planes
// (image x channel block) and output rows.
#include <algorithm>

#include "algo/pool/pool_nchwc.h"
#include "dlas/core/error.h"
#include "dlas/hw/thread_pool.h"

namespace dlas {
namespace {

const ukernel::F32PoolNchwcUkernels& kernels_for(Isa isa, Layout l) {
  DLAS_CHECK(is_blocked(l), ErrorKind::kInvalidInput, "blocked pooling needs a blocked layout");
  const ukernel::F32PoolNchwcUkernels* k =
      ukernel::f32_poolnchwc_for(isa, static_cast<int>(layout_block(l)));
  DLAS_CHECK(k != nullptr, ErrorKind::kUnsupported, "layout ", layout_name(l), " needs vectors of ",
             layout_block(l), " floats, which the ", isa_name(isa), " path lacks");
  return *k;
}

// Runs fn(plane, row_begin, row_end) over every block plane's output rows, in about 4
// chunks per thread.
template <class Fn>
void for_rows(ThreadPool& pool, int64_t planes, int64_t rows, Fn&& fn) {
  const int64_t total = planes * rows;
  const int64_t chunks = std::min<int64_t>(total, 4 * static_cast<int64_t>(pool.threads()));
  pool.parallel_for(static_cast<size_t>(chunks), [&](size_t i) {
    const int64_t b = total * static_cast<int64_t>(i) / chunks;
    const int64_t e = total * static_cast<int64_t>(i + 1) / chunks;
    for (int64_t q = b; q < e;) {
      const int64_t plane = q / rows, r0 = q % rows;
      const int64_t r1 = std::min(rows, r0 + (e - q));
      fn(plane, r0, r1);
      q += r1 - r0;
    }
  });
}

template <class RowsFn>
void pool_blocked(const ukernel::F32PoolNchwcUkernels& k, const PoolProblem& p, const float* x,
                  float* y, ThreadPool& pool, RowsFn&& rows_fn) {
  p.validate();
  const int64_t b = k.lanes, planes = p.n * ((p.c + b - 1) / b);
  const int64_t in = p.h * p.w * b, out = p.oh * p.ow * b;
  for_rows(pool, planes, p.oh,
           [&](int64_t q, int64_t r0, int64_t r1) { rows_fn(x + q * in, y + q * out, r0, r1); });
}

}  // namespace

void max_pool_nchwc(const ukernel::F32PoolNchwcUkernels& k, const PoolProblem& p, const float* x,
                    float* y, ThreadPool& pool) {
  pool_blocked(k, p, x, y, pool, [&](const float* xp, float* yp, int64_t r0, int64_t r1) {
    k.max_rows(p, xp, yp, r0, r1);
  });
}

void average_pool_nchwc(const ukernel::F32PoolNchwcUkernels& k, const PoolProblem& p,
                        bool count_include_pad, const float* x, float* y, ThreadPool& pool) {
  pool_blocked(k, p, x, y, pool, [&](const float* xp, float* yp, int64_t r0, int64_t r1) {
    k.avg_rows(p, count_include_pad, xp, yp, r0, r1);
  });
}

void global_average_pool_nchwc(const ukernel::F32PoolNchwcUkernels& k, int64_t n, int64_t c,
                               int64_t hw, const float* x, float* y, ThreadPool& pool) {
  DLAS_CHECK(n > 0 && c > 0 && hw > 0, ErrorKind::kInvalidInput,
             "global_average_pool: sizes must be positive");
  const int64_t b = k.lanes, planes = n * ((c + b - 1) / b);
  const int64_t chunks = std::min<int64_t>(planes, 4 * static_cast<int64_t>(pool.threads()));
  pool.parallel_for(static_cast<size_t>(chunks), [&](size_t i) {
    const int64_t s = planes * static_cast<int64_t>(i) / chunks;
    const int64_t e = planes * static_cast<int64_t>(i + 1) / chunks;
    k.gavg_planes(e - s, hw, x + s * hw * b, y + s * b);
  });
}

void max_pool(Isa isa, Layout l, const PoolProblem& p, const float* x, float* y, ThreadPool& pool) {
  max_pool_nchwc(kernels_for(isa, l), p, x, y, pool);
}

void average_pool(Isa isa, Layout l, const PoolProblem& p, bool count_include_pad, const float* x,
                  float* y, ThreadPool& pool) {
  average_pool_nchwc(kernels_for(isa, l), p, count_include_pad, x, y, pool);
}

void global_average_pool(Isa isa, Layout l, int64_t n, int64_t c, int64_t hw, const float* x,
                         float* y, ThreadPool& pool) {
  global_average_pool_nchwc(kernels_for(isa, l), n, c, hw, x, y, pool);
}

}  // namespace dlas

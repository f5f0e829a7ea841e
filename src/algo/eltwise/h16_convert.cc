// Parallel 16-bit float row conversions over the ISA's vector kernels (h16-vcvt).
#include "algo/microkernels/h16-vcvt/h16_vcvt.h"
#include "dlas/algo/eltwise.h"
#include "dlas/hw/thread_pool.h"

namespace dlas {
namespace {

// Runs fn(begin, end) over n elements split into whole 16-element blocks, one chunk per
// thread; small rows stay on the calling thread.
template <class Fn>
void split_rows(ThreadPool& pool, size_t n, Fn fn) {
  const size_t t = static_cast<size_t>(pool.threads());
  const size_t blocks = (n + 15) / 16;
  if (t <= 1 || n < 4096) {
    fn(0, n);
    return;
  }
  pool.parallel_for(t, [&](size_t i) {
    const size_t b = blocks * i / t * 16, e = blocks * (i + 1) / t * 16;
    if (b < n) fn(b, e < n ? e : n);
  });
}

}  // namespace

void widen_h16(DType type, Isa isa, size_t n, const uint16_t* x, float* y, ThreadPool& pool) {
  const ukernel::H16WidenFn widen = ukernel::h16_vcvt_for(type, isa).widen;
  split_rows(pool, n, [&](size_t b, size_t e) { widen(e - b, x + b, y + b); });
}

void narrow_h16(DType type, Isa isa, size_t n, const float* x, uint16_t* y, ThreadPool& pool) {
  const ukernel::H16NarrowFn narrow = ukernel::h16_vcvt_for(type, isa).narrow;
  split_rows(pool, n, [&](size_t b, size_t e) { narrow(e - b, x + b, y + b); });
}

}  // namespace dlas

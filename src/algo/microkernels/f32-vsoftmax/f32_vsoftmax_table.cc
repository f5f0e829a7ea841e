#include <algorithm>

#include "algo/microkernels/f32-vsoftmax/f32_vsoftmax.h"
#include "algo/microkernels/isa_dispatch.h"
#include "dlas/algo/eltwise.h"
#include "dlas/hw/thread_pool.h"

namespace dlas::ukernel {

F32VSoftmaxFn f32_vsoftmax_for(Isa isa) {
  static const IsaEntry<F32VSoftmaxFn> kList[] = {
#define X(fn, level) {&fn, Isa::level},
#include "algo/microkernels/f32-vsoftmax/f32_vsoftmax.inc"
#undef X
  };
  static const F32VSoftmaxFn table[] = {best_for_isa(kList, Isa::kScalar, "f32 softmax"),
                                        best_for_isa(kList, Isa::kAvx2, "f32 softmax"),
                                        best_for_isa(kList, Isa::kAvx512, "f32 softmax")};
  const Isa base = base_isa(isa);
  return table[base == Isa::kAvx512 ? 2 : base == Isa::kAvx2 ? 1 : 0];
}

}  // namespace dlas::ukernel

namespace dlas {

void softmax(Isa isa, size_t rows, size_t c, const float* x, float* y, ThreadPool& pool) {
  const ukernel::F32VSoftmaxFn fn = ukernel::f32_vsoftmax_for(isa);
  // Parts of at least 16K values: a small plane's rows are not worth a second thread.
  const size_t parts =
      std::min<size_t>(static_cast<size_t>(pool.threads()), std::max<size_t>(1, rows * c / 16384));
  pool.parallel_for(parts, [&](size_t t) {
    const size_t r0 = rows * t / parts, r1 = rows * (t + 1) / parts;
    fn(r1 - r0, c, x + r0 * c, y + r0 * c);
  });
}

}  // namespace dlas

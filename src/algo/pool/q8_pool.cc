// 8-bit MaxPool (q8_pool.h): threads over planes; the interior of each output row runs
// without bounds checks (the int8 ResNet stem's 3x3 / 2 pool was a reference step, which
// widens the whole tensor to f32: a third of int8 resnet50's time).
#include "dlas/algo/pool.h"

#include "dlas/hw/thread_pool.h"

namespace dlas {
namespace {

template <class T>
void plane(const PoolProblem& p, const T* x, T* y) {
  for (int64_t oy = 0; oy < p.oh; ++oy) {
    const int64_t iy0 = oy * p.stride_h - p.pad_t;
    int64_t ky0 = 0, ky1 = p.kh;  // taps with iy in [0, h)
    while (ky0 < ky1 && iy0 + ky0 * p.dil_h < 0) ++ky0;
    while (ky1 > ky0 && iy0 + (ky1 - 1) * p.dil_h >= p.h) --ky1;
    T* out = y + oy * p.ow;
    for (int64_t ox = 0; ox < p.ow; ++ox) {
      const int64_t ix0 = ox * p.stride_w - p.pad_l;
      T m = x[(iy0 + ky0 * p.dil_h) * p.w + (ix0 < 0 ? 0 : ix0)];  // one tap inside
      if (ix0 >= 0 && ix0 + (p.kw - 1) * p.dil_w < p.w) {
        for (int64_t ky = ky0; ky < ky1; ++ky) {
          const T* row = x + (iy0 + ky * p.dil_h) * p.w + ix0;
          for (int64_t kx = 0; kx < p.kw; ++kx) m = row[kx * p.dil_w] > m ? row[kx * p.dil_w] : m;
        }
      } else {
        for (int64_t ky = ky0; ky < ky1; ++ky) {
          const T* row = x + (iy0 + ky * p.dil_h) * p.w;
          for (int64_t kx = 0; kx < p.kw; ++kx) {
            const int64_t ix = ix0 + kx * p.dil_w;
            if (ix >= 0 && ix < p.w) m = row[ix] > m ? row[ix] : m;
          }
        }
      }
      out[ox] = m;
    }
  }
}

template <class T>
void run(const PoolProblem& p, const T* x, T* y, ThreadPool& pool) {
  pool.parallel_for(static_cast<size_t>(p.n * p.c), [&](size_t i) {
    plane(p, x + static_cast<int64_t>(i) * p.h * p.w, y + static_cast<int64_t>(i) * p.oh * p.ow);
  });
}

}  // namespace

void max_pool_8bit(const PoolProblem& p, bool is_signed, const void* x, void* y, ThreadPool& pool) {
  if (is_signed)
    run(p, static_cast<const int8_t*>(x), static_cast<int8_t*>(y), pool);
  else
    run(p, static_cast<const uint8_t*>(x), static_cast<uint8_t*>(y), pool);
}

}  // namespace dlas

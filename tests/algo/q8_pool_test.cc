// The 8-bit MaxPool (int8 graphs) against a literal window loop, u8 and s8, padded, strided,
// ceil-mode and 1-thread / 2-thread runs, rows of one window row and rows too wide for the
// separable form.
#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "dlas/algo/pool.h"
#include "dlas/hw/thread_pool.h"

namespace dlas {
namespace {

template <class T>
std::vector<T> literal(const PoolProblem& p, const std::vector<T>& x) {
  std::vector<T> y(static_cast<size_t>(p.n * p.c * p.oh * p.ow));
  for (int64_t i = 0; i < p.n * p.c; ++i)
    for (int64_t oy = 0; oy < p.oh; ++oy)
      for (int64_t ox = 0; ox < p.ow; ++ox) {
        int m = -1000;
        for (int64_t ky = 0; ky < p.kh; ++ky)
          for (int64_t kx = 0; kx < p.kw; ++kx) {
            const int64_t iy = oy * p.stride_h - p.pad_t + ky, ix = ox * p.stride_w - p.pad_l + kx;
            if (iy >= 0 && iy < p.h && ix >= 0 && ix < p.w)
              m = std::max<int>(m, x[(i * p.h + iy) * p.w + ix]);
          }
        y[(i * p.oh + oy) * p.ow + ox] = static_cast<T>(m);
      }
  return y;
}

template <class T>
void check(PoolProblem p, bool ceil_mode, int threads) {
  p.set_output_size(ceil_mode);
  std::mt19937 rng(static_cast<uint32_t>(p.h * 31 + p.kh));
  std::vector<T> x(static_cast<size_t>(p.n * p.c * p.h * p.w));
  for (auto& v : x) v = static_cast<T>(rng());
  std::vector<T> y(static_cast<size_t>(p.n * p.c * p.oh * p.ow), 0);
  ThreadPool pool(threads);
  max_pool_8bit(p, std::is_signed_v<T>, x.data(), y.data(), pool);
  EXPECT_EQ(y, literal(p, x)) << p.h << "x" << p.w << " k" << p.kh << " s" << p.stride_h
                              << " ceil=" << ceil_mode;
}

TEST(Q8MaxPool, EqualsTheWindowMax) {
  std::vector<PoolProblem> ps;
  auto add = [&](int64_t h, int64_t w, int64_t k, int64_t s, int64_t pad) {
    PoolProblem p;
    p.n = 2, p.c = 3, p.h = h, p.w = w, p.kh = p.kw = k, p.stride_h = p.stride_w = s;
    p.pad_t = p.pad_l = p.pad_b = p.pad_r = pad;
    ps.push_back(p);
  };
  add(16, 16, 3, 2, 1);  // ResNet stem pool
  add(9, 11, 3, 2, 1);
  add(8, 8, 2, 2, 0);  // VGG pool
  add(7, 5, 3, 1, 1);
  add(5, 9, 2, 3, 1);
  add(1, 9, 3, 2, 1);     // one window row inside the image
  add(3, 2100, 3, 2, 1);  // rows wider than the separable form's stack row
  for (const PoolProblem& p : ps)
    for (bool ceil_mode : {false, true})
      for (int threads : {1, 2}) {
        check<uint8_t>(p, ceil_mode, threads);
        check<int8_t>(p, ceil_mode, threads);
      }
}

}  // namespace
}  // namespace dlas

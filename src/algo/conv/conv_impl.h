// Internal: what the per-type implementation files of the conv algorithms share. An
// implementation is a ConvAlgorithm for one ConvTypes (the list's rows dispatch to it);
// its prepared convs run on typed pointers through these bases.
#pragma once

#include <cstdint>

#include "dlas/algo/conv.h"

namespace dlas {

// A prepared conv whose input, output and residual are all of element type T.
template <class T>
class TypedPreparedConv : public PreparedConv {
 public:
  void run(const void* x, void* y, const void* residual, void* workspace,
           ThreadPool& pool) const final {
    run_typed(static_cast<const T*>(x), static_cast<T*>(y), static_cast<const T*>(residual),
              workspace, pool);
  }
  // x: [n][c][h][w]; y: [n][k][oh][ow]; residual: like y, or null. Must not allocate.
  virtual void run_typed(const T* x, T* y, const T* residual, void* workspace,
                         ThreadPool& pool) const = 0;
};

// f32 implementations.
class PreparedF32Conv : public TypedPreparedConv<float> {
 public:
  ConvCompute compute() const final { return ConvCompute::kF32; }
};

// 16-bit (f16 / bf16) implementations: their compute() says emulated or native.
using PreparedH16Conv = TypedPreparedConv<uint16_t>;

// The literal definition the oracles share: calls fn(x_index, w_index) for every tap of
// output pixel (oy, ox) of image n, group g, that lands inside the input (padding
// contributes nothing); w_index is into one output channel's [C/g][KH][KW] weights.
template <class Fn>
inline void for_each_tap_inside(const ConvProblem& c, int64_t n, int64_t g, int64_t oy, int64_t ox,
                                Fn fn) {
  const int64_t cg = c.c_per_group();
  for (int64_t ci = 0; ci < cg; ++ci)
    for (int64_t ky = 0; ky < c.kh; ++ky) {
      const int64_t iy = oy * c.stride_h - c.pad_t + ky * c.dil_h;
      if (iy < 0 || iy >= c.h) continue;
      for (int64_t kx = 0; kx < c.kw; ++kx) {
        const int64_t ix = ox * c.stride_w - c.pad_l + kx * c.dil_w;
        if (ix < 0 || ix >= c.w) continue;
        fn(((n * c.c + g * cg + ci) * c.h + iy) * c.w + ix, (ci * c.kh + ky) * c.kw + kx);
      }
    }
}

}  // namespace dlas

// Portable int8 fully-connected microkernels (u8 x s8 quads): the kScalar path's 4x4 tile
// and its single-row tile, plain loops (the same float steps as the vector tiles' store).
#include "algo/microkernels/qs8-fc/qs8_fc.h"

namespace dlas::ukernel {
namespace {

template <int MR, int NR>
void qs8_fc_scalar(size_t m, size_t n, size_t kq, const uint8_t* x, size_t ldx, const void* w_,
                   float* y, size_t ldy, const QS8FcParams& p) {
  const int8_t* w = static_cast<const int8_t*>(w_);
  int32_t acc[MR][NR];
  for (int i = 0; i < MR; ++i)
    for (int j = 0; j < NR; ++j) acc[i][j] = p.init[j];
  for (size_t q = 0; q < kq; ++q) {
    for (size_t i = 0; i < m; ++i) {
      const uint8_t* xq = x + i * ldx + q * 4;
      for (int j = 0; j < NR; ++j)
        for (int e = 0; e < 4; ++e)
          acc[i][j] += static_cast<int32_t>(xq[e]) * static_cast<int32_t>(w[j * 4 + e]);
    }
    w += NR * 4;
  }
  for (size_t i = 0; i < m; ++i)
    for (size_t j = 0; j < n; ++j) {
      float v = __builtin_fmaf(static_cast<float>(acc[i][j]), p.mult[j], p.bias[j]);
      v = v < p.lo ? p.lo : v;
      y[i * ldy + j] = v > p.hi ? p.hi : v;
    }
}

}  // namespace

void qs8_fc_4x4__scalar(size_t m, size_t n, size_t kq, const uint8_t* x, size_t ldx, const void* w,
                        float* y, size_t ldy, const QS8FcParams& p) {
  qs8_fc_scalar<4, 4>(m, n, kq, x, ldx, w, y, ldy, p);
}

void qs8_fc_1x4__scalar(size_t m, size_t n, size_t kq, const uint8_t* x, size_t ldx, const void* w,
                        float* y, size_t ldy, const QS8FcParams& p) {
  qs8_fc_scalar<1, 4>(m, n, kq, x, ldx, w, y, ldy, p);
}

}  // namespace dlas::ukernel

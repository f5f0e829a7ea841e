// Portable int8 depthwise kernel: the same loop nest one pixel at a time, the same
// requantization code as the vector kernels' tails.
#include "algo/microkernels/qs8-dwconv/qs8_dwconv.h"
#include "algo/microkernels/qs8-gemm/qs8_gemm_template.h"

namespace dlas::ukernel {

void qs8_dwconv_1lane__scalar(const QS8DwPlane& d, int32_t bias, float mult, const void* residual,
                              void* y, const QS8GemmParams& p) {
  const uint8_t* rb = static_cast<const uint8_t*>(residual);
  uint8_t* yb = static_cast<uint8_t*>(y);
  for (int64_t oy = 0; oy < d.oh; ++oy)
    for (int64_t ox = 0; ox < d.ow; ++ox) {
      int32_t acc = bias;
      for (int ky = 0; ky < d.kh; ++ky)
        for (int kx = 0; kx < d.kw; ++kx) {
          const int64_t c = kx * d.dw;
          acc += d.x[((c % d.sw) * d.hp + oy * d.sh + ky * d.dh) * d.wq + c / d.sw + ox] *
                 d.w[ky * d.kw + kx];
        }
      const int64_t off = oy * d.ow + ox;
      yb[off] =
          qs8_requant1(acc, mult, rb ? qs8_residual1(p, rb, static_cast<size_t>(off)) : 0.f, p);
    }
}

}  // namespace dlas::ukernel

// Portable int8 depthwise kernel: the vector kernels' template at one lane, vpmaddwd and
// the FMA written out in plain C (the same arithmetic, so the same bits).
#include <cstring>

#include "algo/microkernels/qs8-dwconv/qs8_dwconv.h"
#include "algo/microkernels/qs8-dwconv/qs8_dwconv_template.h"

namespace {

struct ScalarPairs {
  static constexpr int kLanes = 1;
  typedef QVec<1>::i32 I;
  typedef QVec<1>::f32 F;
  static I dot(I acc, I b, I a) {
    int16_t bw[2], aw[2];
    std::memcpy(bw, &b, sizeof(bw));
    std::memcpy(aw, &a, sizeof(aw));
    const uint32_t s = static_cast<uint32_t>(acc[0]) + static_cast<uint32_t>(bw[0] * aw[0]) +
                       static_cast<uint32_t>(bw[1] * aw[1]);
    return I{static_cast<int32_t>(s)};
  }
  static F fma(F a, F b, F c) { return F{__builtin_fmaf(a[0], b[0], c[0])}; }
};

}  // namespace

namespace dlas::ukernel {

DLAS_QS8_DWCONV_KERNEL(qs8_dwconv_1lane__scalar, ScalarPairs, 4)

}  // namespace dlas::ukernel

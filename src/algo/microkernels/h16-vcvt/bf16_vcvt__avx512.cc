// avx512 bf16 rows: the vector template with 16 lanes.
#include "algo/microkernels/h16-vcvt/bf16_vcvt_template.h"
#include "algo/microkernels/h16-vcvt/h16_vcvt.h"

namespace dlas::ukernel {

void bf16_vcvt__avx512_widen(size_t n, const uint16_t* x, float* y) { bf16_widen_vec<16>(n, x, y); }

void bf16_vcvt__avx512_narrow(size_t n, const float* x, uint16_t* y) {
  bf16_narrow_vec<16>(n, x, y);
}

}  // namespace dlas::ukernel

// avx2 bf16 rows: the vector template with 8 lanes.
#include "algo/microkernels/h16-vcvt/bf16_vcvt_template.h"
#include "algo/microkernels/h16-vcvt/h16_vcvt.h"

namespace dlas::ukernel {

void bf16_vcvt__avx2_widen(size_t n, const uint16_t* x, float* y) { bf16_widen_vec<8>(n, x, y); }

void bf16_vcvt__avx2_narrow(size_t n, const float* x, uint16_t* y) { bf16_narrow_vec<8>(n, x, y); }

}  // namespace dlas::ukernel

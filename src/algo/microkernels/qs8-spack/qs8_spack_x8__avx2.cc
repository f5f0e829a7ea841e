// AVX2: 8 output channels per ymm, s16 pairs through vpmaddwd (exact, qs8_gemm.h).
#include "algo/microkernels/qs8-gemm/qs8_gemm_avx2_policy.h"
#include "algo/microkernels/qs8-spack/qs8_spack.h"
#include "algo/microkernels/qs8-spack/qs8_spack_template.h"

namespace dlas::ukernel {

QS8SpackFn qs8_spack_x8__avx2(int vectors, int vh, int vw) {
  return qs8_spack_select<QS8Avx2Pairs>(vectors, vh, vw);
}

}  // namespace dlas::ukernel

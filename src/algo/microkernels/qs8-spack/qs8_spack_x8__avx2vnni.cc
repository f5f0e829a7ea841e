// AVX-VNNI: 8 output channels per ymm, u8 x s8 quads through vpdpbusd (VEX).
#include "algo/microkernels/qs8-gemm/qs8_gemm_avx2vnni_policy.h"
#include "algo/microkernels/qs8-spack/qs8_spack.h"
#include "algo/microkernels/qs8-spack/qs8_spack_template.h"

namespace dlas::ukernel {

QS8SpackFn qs8_spack_x8__avx2vnni(int vectors, int vh, int vw) {
  return qs8_spack_select<QS8Avx2VnniQuads>(vectors, vh, vw);
}

}  // namespace dlas::ukernel

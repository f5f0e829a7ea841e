// AVX512-VNNI (and AMX machines): 16 output channels per zmm, u8 x s8 quads through vpdpbusd.
#include "algo/microkernels/qs8-gemm/qs8_gemm_avx512vnni_policy.h"
#include "algo/microkernels/qs8-spack/qs8_spack.h"
#include "algo/microkernels/qs8-spack/qs8_spack_template.h"

namespace dlas::ukernel {

QS8SpackFn qs8_spack_x16__avx512vnni(int vectors, int vh, int vw) {
  return qs8_spack_select<QS8Avx512VnniQuads>(vectors, vh, vw);
}

}  // namespace dlas::ukernel

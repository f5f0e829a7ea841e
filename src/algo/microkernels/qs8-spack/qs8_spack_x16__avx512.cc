// AVX-512 without VNNI: 16 output channels per zmm, s16 pairs through vpmaddwd.
#include "algo/microkernels/qs8-gemm/qs8_gemm_avx512_policy.h"
#include "algo/microkernels/qs8-spack/qs8_spack.h"
#include "algo/microkernels/qs8-spack/qs8_spack_template.h"

namespace dlas::ukernel {

QS8SpackFn qs8_spack_x16__avx512(int vectors, int vh, int vw) {
  return qs8_spack_select<QS8Avx512Pairs>(vectors, vh, vw);
}

}  // namespace dlas::ukernel

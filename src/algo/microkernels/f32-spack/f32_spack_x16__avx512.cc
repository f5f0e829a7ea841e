// AVX-512 spatial-pack kernels: 16 output channels per zmm.
#include "algo/microkernels/f32-spack/f32_spack.h"
#include "algo/microkernels/f32-spack/f32_spack_template.h"

namespace dlas::ukernel {
namespace {
typedef float v16f __attribute__((vector_size(64)));
}  // namespace

F32SpackFn f32_spack_x16__avx512(int vectors, int vh, int vw) {
  return spack_select<v16f, 16>(vectors, vh, vw);
}

}  // namespace dlas::ukernel

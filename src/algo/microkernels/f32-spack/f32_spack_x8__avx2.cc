// AVX2 spatial-pack kernels: 8 output channels per ymm.
#include "algo/microkernels/f32-spack/f32_spack.h"
#include "algo/microkernels/f32-spack/f32_spack_template.h"

namespace dlas::ukernel {
namespace {
typedef float v8f __attribute__((vector_size(32)));
}  // namespace

F32SpackFn f32_spack_x8__avx2(int vectors, int vh, int vw) {
  return spack_select<v8f, 8>(vectors, vh, vw);
}

}  // namespace dlas::ukernel

// Portable spatial-pack kernels (4-float GCC vectors: SSE2 on x86-64, scalar elsewhere).
#include "algo/microkernels/f32-spack/f32_spack.h"
#include "algo/microkernels/f32-spack/f32_spack_template.h"

namespace dlas::ukernel {
namespace {
typedef float v4f __attribute__((vector_size(16)));
}  // namespace

F32SpackFn f32_spack_x4__scalar(int vectors, int vh, int vw) {
  return spack_select<v4f, 4>(vectors, vh, vw);
}

}  // namespace dlas::ukernel

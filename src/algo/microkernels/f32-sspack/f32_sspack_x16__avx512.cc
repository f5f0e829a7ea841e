// AVX-512 sparse spatial-pack kernels: 16 output channels per zmm.
#include "algo/microkernels/f32-sspack/f32_sspack.h"
#include "algo/microkernels/f32-sspack/f32_sspack_template.h"

namespace dlas::ukernel {
namespace {
typedef float v16f __attribute__((vector_size(64)));
}  // namespace

F32SspackFn f32_sspack_x16__avx512(int vectors, int vh, int vw) {
  return sspack_select<v16f, 16>(vectors, vh, vw);
}

}  // namespace dlas::ukernel

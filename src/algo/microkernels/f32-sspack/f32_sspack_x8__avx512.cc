// AVX-512VL sparse spatial-pack kernels: 8 output channels per ymm, 32 registers (bsr8x1 weights).
#include "algo/microkernels/f32-sspack/f32_sspack.h"
#include "algo/microkernels/f32-sspack/f32_sspack_template.h"

namespace dlas::ukernel {
namespace {
typedef float v8f __attribute__((vector_size(32)));
}  // namespace

F32SspackFn f32_sspack_x8__avx512(int vectors, int vh, int vw) {
  return sspack_select<v8f, 8>(vectors, vh, vw);
}

}  // namespace dlas::ukernel

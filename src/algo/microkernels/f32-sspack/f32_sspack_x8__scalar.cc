// Scalar-path sparse spatial-pack kernels: 8-float GCC vectors with baseline (SSE2) code; the
// oracle ISA path. 32-byte vectors without AVX pass in memory; only inline helpers take them.
#pragma GCC diagnostic ignored "-Wpsabi"
#include "algo/microkernels/f32-sspack/f32_sspack.h"
#include "algo/microkernels/f32-sspack/f32_sspack_template.h"

namespace dlas::ukernel {
namespace {
typedef float v8f __attribute__((vector_size(32)));
}  // namespace

F32SspackFn f32_sspack_x8__scalar(int vectors, int vh, int vw) {
  return sspack_select<v8f, 8>(vectors, vh, vw);
}

}  // namespace dlas::ukernel

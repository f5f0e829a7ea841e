// AVX-512 blocked-layout direct kernels: nchw16c, one zmm per output-channel block.
#include "algo/microkernels/f32-nchwc/f32_nchwc.h"
#include "algo/microkernels/f32-nchwc/f32_nchwc_template.h"

namespace dlas::ukernel {
namespace {
typedef float v16f __attribute__((vector_size(64)));
}  // namespace

F32NchwcFn f32_nchwc_x16__avx512(int blocks, int pixels, int in_lanes, int stride, int rows) {
  return nchwc_select<v16f, 16, 24, 32>(blocks, pixels, in_lanes, stride, rows);
}

}  // namespace dlas::ukernel

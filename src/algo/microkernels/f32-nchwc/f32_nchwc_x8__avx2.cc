// AVX2 blocked-layout direct kernels: nchw8c, one ymm per output-channel block.
#include "algo/microkernels/f32-nchwc/f32_nchwc.h"
#include "algo/microkernels/f32-nchwc/f32_nchwc_template.h"

namespace dlas::ukernel {
namespace {
typedef float v8f __attribute__((vector_size(32)));
}  // namespace

F32NchwcFn f32_nchwc_x8__avx2(int blocks, int pixels, int in_lanes, int stride, int rows) {
  return nchwc_select<v8f, 8, 12, 16>(blocks, pixels, in_lanes, stride, rows);
}

}  // namespace dlas::ukernel

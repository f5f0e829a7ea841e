// The AVX-512 set's 16-lane code built for AVX2 (two ymm per vector), so its logic is
// tested on machines without AVX-512.
// 64-byte vectors without AVX-512 pass in memory; only inline helpers take them.
#pragma GCC diagnostic ignored "-Wpsabi"
#include "algo/microkernels/f32-nchwc/f32_nchwc.h"
#include "algo/microkernels/f32-nchwc/f32_nchwc_template.h"

namespace dlas::ukernel {
namespace {
typedef float v16f __attribute__((vector_size(64)));
}  // namespace

F32NchwcFn f32_nchwc_x16__avx2(int blocks, int pixels, int in_lanes, int stride, int rows) {
  return nchwc_select<v16f, 16, 24, 32>(blocks, pixels, in_lanes, stride, rows);
}

}  // namespace dlas::ukernel

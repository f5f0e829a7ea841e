// The AVX-512 set's 16-lane code built for AVX2 (two ymm per vector), so its logic is tested on
// machines without AVX-512. 64-byte vectors without AVX-512 pass in memory; only inline helpers
// take them.
#pragma GCC diagnostic ignored "-Wpsabi"
#include "algo/microkernels/f32-sspack/f32_sspack.h"
#include "algo/microkernels/f32-sspack/f32_sspack_template.h"

namespace dlas::ukernel {
namespace {
typedef float v16f __attribute__((vector_size(64)));
}  // namespace

F32SspackFn f32_sspack_x16__avx2(int vectors, int vh, int vw) {
  return sspack_select<v16f, 16>(vectors, vh, vw);
}

}  // namespace dlas::ukernel

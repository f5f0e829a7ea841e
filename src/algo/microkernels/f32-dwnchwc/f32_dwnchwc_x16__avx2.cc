// The AVX-512 set's 16-lane code built for AVX2 (two ymm per vector), so its logic is
// tested on machines without AVX-512.
// 64-byte vectors without AVX-512 pass in memory; only inline helpers take them.
#pragma GCC diagnostic ignored "-Wpsabi"
#include "algo/microkernels/f32-dwnchwc/f32_dwnchwc.h"
#include "algo/microkernels/f32-dwnchwc/f32_dwnchwc_template.h"

namespace dlas::ukernel {
namespace {
typedef float v16f __attribute__((vector_size(64)));
}  // namespace

F32DwNchwcFn f32_dwnchwc_x16__avx2(int pixels, int stride, int kw) {
  return dwnchwc_select<v16f, 16, 16>(pixels, stride, kw);
}

}  // namespace dlas::ukernel

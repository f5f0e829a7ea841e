// Test-only: the AVX-512 bf16 set's 16-lane code built for AVX2 (two ymm per vector).
#include "algo/microkernels/bf16-dwnchwc/bf16_dwnchwc.h"
#include "algo/microkernels/bf16-dwnchwc/bf16_dwnchwc_io.h"
#include "algo/microkernels/f32-dwnchwc/f32_dwnchwc_template.h"

namespace dlas::ukernel {
namespace {
typedef float v16f __attribute__((vector_size(64)));
}  // namespace

Bf16DwNchwcFn bf16_dwnchwc_x16__avx2(int pixels, int stride, int kw) {
  return dwnchwc_select<v16f, 16, 16, Bf16Io<v16f, 16, uint16_t>>(pixels, stride, kw);
}
Bf16DwNchwcF32OutFn bf16_dwnchwc_x16__avx2_f32_out(int pixels, int stride, int kw) {
  return dwnchwc_select<v16f, 16, 16, Bf16Io<v16f, 16, float>>(pixels, stride, kw);
}

}  // namespace dlas::ukernel

// Test-only: the AVX-512 bf16 set's 16-lane code built for AVX2 (two ymm per vector).
#include "algo/microkernels/bf16-dwnchwc/bf16_dwnchwc.h"
#include "algo/microkernels/bf16-dwnchwc/bf16_dwnchwc_io.h"
#include "algo/microkernels/f32-dwnchwc/f32_dwnchwc_template.h"

namespace dlas::ukernel {
namespace {
typedef float v16f __attribute__((vector_size(64)));
}  // namespace

DLAS_BF16_DWNCHWC_ENTRY(bf16_dwnchwc_x16__avx2, v16f, 16)

}  // namespace dlas::ukernel

// AVX-512 bf16 blocked-layout depthwise kernels: nchw16c bf16, one zmm of f32 per pixel.
#include "algo/microkernels/bf16-dwnchwc/bf16_dwnchwc.h"
#include "algo/microkernels/bf16-dwnchwc/bf16_dwnchwc_io.h"
#include "algo/microkernels/f32-dwnchwc/f32_dwnchwc_template.h"

namespace dlas::ukernel {
namespace {
typedef float v16f __attribute__((vector_size(64)));
}  // namespace

DLAS_BF16_DWNCHWC_ENTRY(bf16_dwnchwc_x16__avx512, v16f, 16)

}  // namespace dlas::ukernel

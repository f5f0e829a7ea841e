// AVX-512 Winograd transforms: 16 tiles per zmm.
#include "algo/microkernels/f32-wino/f32_wino.h"
#include "algo/microkernels/f32-wino/f32_wino_template.h"

namespace dlas::ukernel {
namespace {
typedef float v16f __attribute__((vector_size(64)));
}  // namespace

DLAS_F32_WINO_DEFINE(f32_wino_x16__avx512, v16f, 16)

}  // namespace dlas::ukernel

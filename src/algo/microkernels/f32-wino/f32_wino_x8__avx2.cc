// AVX2 Winograd transforms: 8 tiles per ymm.
#include "algo/microkernels/f32-wino/f32_wino.h"
#include "algo/microkernels/f32-wino/f32_wino_template.h"

namespace dlas::ukernel {
namespace {
typedef float v8f __attribute__((vector_size(32)));
}  // namespace

DLAS_F32_WINO_DEFINE(f32_wino_x8__avx2, v8f, 8)

}  // namespace dlas::ukernel

// Portable Winograd transforms: the oracle for the vector kernels.
#include "algo/microkernels/f32-wino/f32_wino.h"
#include "algo/microkernels/f32-wino/f32_wino_template.h"

namespace dlas::ukernel {
DLAS_F32_WINO_DEFINE(f32_wino_x1__scalar, float, 1)

}  // namespace dlas::ukernel

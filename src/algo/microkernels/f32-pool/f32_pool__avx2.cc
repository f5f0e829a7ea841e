// f32 pooling kernels for the avx2 path (the template's loops, vectorized by GCC with
// this translation unit's flags).
#include "algo/microkernels/f32-pool/f32_pool_template.h"

namespace dlas::ukernel {

constinit const F32PoolKernels f32_pool__avx2 = make_pool_kernels();

}  // namespace dlas::ukernel

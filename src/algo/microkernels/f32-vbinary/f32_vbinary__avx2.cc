// f32 binary elementwise kernels for the avx2 path (the template's loops, vectorized by
// GCC with this translation unit's flags).
#include "algo/microkernels/f32-vbinary/f32_vbinary_template.h"

namespace dlas::ukernel {

constinit const F32VBinaryKernels f32_vbinary__avx2 = make_vbinary_kernels();

}  // namespace dlas::ukernel

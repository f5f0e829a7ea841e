// Portable depthwise kernels (plain float, L = 1): the oracle for the vector sets.
#include "algo/microkernels/f32-dwconv/f32_dwconv_template.h"

namespace dlas::ukernel {

constinit const F32DwconvKernels f32_dwconv_1lane__scalar = make_dwconv_kernels<float, int, 1>();

}  // namespace dlas::ukernel

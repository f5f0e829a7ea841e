// AVX-512 depthwise kernels: 16-lane vectors (zmm).
#include "algo/microkernels/f32-dwconv/f32_dwconv_template.h"

namespace dlas::ukernel {
namespace {
typedef float V16f __attribute__((vector_size(64)));
typedef int32_t V16i __attribute__((vector_size(64)));
}  // namespace

constinit const F32DwconvKernels f32_dwconv_16lane__avx512 = make_dwconv_kernels<V16f, V16i, 16>();

}  // namespace dlas::ukernel

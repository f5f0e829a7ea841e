// AVX2+FMA depthwise kernels: 8-lane vectors (ymm).
#include "algo/microkernels/f32-dwconv/f32_dwconv_template.h"

namespace dlas::ukernel {
namespace {
typedef float V8f __attribute__((vector_size(32)));
typedef int32_t V8i __attribute__((vector_size(32)));
}  // namespace

constinit const F32DwconvKernels f32_dwconv_8lane__avx2 = make_dwconv_kernels<V8f, V8i, 8>();

}  // namespace dlas::ukernel

// AVX-512 blocked-layout depthwise kernels: nchw16c, one zmm per output pixel.
#include "algo/microkernels/f32-dwnchwc/f32_dwnchwc.h"
#include "algo/microkernels/f32-dwnchwc/f32_dwnchwc_template.h"

namespace dlas::ukernel {
namespace {
typedef float v16f __attribute__((vector_size(64)));
}  // namespace

F32DwNchwcFn f32_dwnchwc_x16__avx512(int pixels, int stride, int kw) {
  return dwnchwc_select<v16f, 16, 16>(pixels, stride, kw);
}

}  // namespace dlas::ukernel

// AVX2 blocked-layout depthwise kernels: nchw8c, one ymm per output pixel.
#include "algo/microkernels/f32-dwnchwc/f32_dwnchwc.h"
#include "algo/microkernels/f32-dwnchwc/f32_dwnchwc_template.h"

namespace dlas::ukernel {
namespace {
typedef float v8f __attribute__((vector_size(32)));
}  // namespace

F32DwNchwcFn f32_dwnchwc_x8__avx2(int pixels, int stride, int kw) {
  return dwnchwc_select<v8f, 8, 12>(pixels, stride, kw);
}

}  // namespace dlas::ukernel

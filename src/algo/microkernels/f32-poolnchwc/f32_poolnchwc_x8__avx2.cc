// AVX2 blocked-layout pooling: nchw8c, one ymm per pixel.
#include "algo/microkernels/f32-poolnchwc/f32_poolnchwc.h"
#include "algo/microkernels/f32-poolnchwc/f32_poolnchwc_template.h"

namespace dlas::ukernel {
namespace {
typedef float vf __attribute__((vector_size(8 * 4)));
}  // namespace

constinit const F32PoolNchwcUkernels f32_poolnchwc_x8__avx2 =
    make_poolnchwc<vf, 8>("f32_poolnchwc_x8__avx2", Isa::kAvx2);

}  // namespace dlas::ukernel

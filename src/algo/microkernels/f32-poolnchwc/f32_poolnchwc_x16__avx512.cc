// AVX-512 blocked-layout pooling: nchw16c, one zmm per pixel.
#include "algo/microkernels/f32-poolnchwc/f32_poolnchwc.h"
#include "algo/microkernels/f32-poolnchwc/f32_poolnchwc_template.h"

namespace dlas::ukernel {
namespace {
typedef float vf __attribute__((vector_size(16 * 4)));
}  // namespace

constinit const F32PoolNchwcUkernels f32_poolnchwc_x16__avx512 =
    make_poolnchwc<vf, 16>("f32_poolnchwc_x16__avx512", Isa::kAvx512);

}  // namespace dlas::ukernel

// The AVX-512 set's 16-lane code built for AVX2 (two ymm per vector), so its logic is
// tested on machines without AVX-512.
// 64-byte vectors without AVX-512 pass in memory; only inline helpers take them.
#pragma GCC diagnostic ignored "-Wpsabi"
#include "algo/microkernels/f32-poolnchwc/f32_poolnchwc.h"
#include "algo/microkernels/f32-poolnchwc/f32_poolnchwc_template.h"

namespace dlas::ukernel {
namespace {
typedef float vf __attribute__((vector_size(16 * 4)));
}  // namespace

constinit const F32PoolNchwcUkernels f32_poolnchwc_x16__avx2 =
    make_poolnchwc<vf, 16>("f32_poolnchwc_x16__avx2", Isa::kAvx2);

}  // namespace dlas::ukernel

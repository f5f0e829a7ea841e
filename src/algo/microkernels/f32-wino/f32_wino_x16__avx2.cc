// The AVX-512 kernel's 16-lane code built for AVX2 (GCC splits each vector into two ymm),
// so its logic is tested on machines without AVX-512.
// 64-byte vectors without AVX-512 pass in memory; only inline helpers take them.
#pragma GCC diagnostic ignored "-Wpsabi"
#include "algo/microkernels/f32-wino/f32_wino.h"
#include "algo/microkernels/f32-wino/f32_wino_template.h"

namespace dlas::ukernel {
namespace {
typedef float v16f __attribute__((vector_size(64)));
}  // namespace

DLAS_F32_WINO_DEFINE(f32_wino_x16__avx2, v16f, 16)

}  // namespace dlas::ukernel

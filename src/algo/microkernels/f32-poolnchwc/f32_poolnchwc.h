// f32 pooling kernels on blocked activations (NCHWc, dlas/algo/layout.h): one channel
// block's plane [h][w][lanes] -> [oh][ow][lanes], the vector lanes over the block's
// channels, the same per-channel semantics as the NCHW kernels (dlas/algo/pool.h). One
// list: f32-poolnchwc/f32_poolnchwc.inc; bodies: f32_poolnchwc_template.h, one TU per ISA.
#pragma once

#include <cstdint>
#include <vector>

#include "dlas/algo/pool.h"

namespace dlas::ukernel {

struct F32PoolNchwcUkernels {
  const char* name;  // "f32_poolnchwc_x16__avx512"
  Isa isa;
  int lanes;
  // Output rows [oy0, oy1) of one block plane (p.c, p.n ignored); x and y point at the
  // planes.
  void (*max_rows)(const PoolProblem& p, const float* x, float* y, int64_t oy0, int64_t oy1);
  void (*avg_rows)(const PoolProblem& p, bool count_include_pad, const float* x, float* y,
                   int64_t oy0, int64_t oy1);
  // planes x [hw][lanes] -> planes x [lanes] means.
  void (*gavg_planes)(int64_t planes, int64_t hw, const float* x, float* y);
};

// The production sets (the X rows of the list).
const std::vector<F32PoolNchwcUkernels>& f32_poolnchwc_ukernels();
// The test-only sets (the T rows): run by the tests, never selected.
const std::vector<F32PoolNchwcUkernels>& f32_poolnchwc_test_only_ukernels();
// The production set of `lanes` lanes the ISA path can run, or nullptr.
const F32PoolNchwcUkernels* f32_poolnchwc_for(Isa isa, int lanes);

}  // namespace dlas::ukernel

// Declarations of every kernel set, derived from f32_poolnchwc.inc.
namespace dlas::ukernel {
#define X(name, isa, lanes) extern const F32PoolNchwcUkernels name;
#define T(name, isa, lanes) X(name, isa, lanes)
#include "algo/microkernels/f32-poolnchwc/f32_poolnchwc.inc"
#undef T
#undef X
}  // namespace dlas::ukernel

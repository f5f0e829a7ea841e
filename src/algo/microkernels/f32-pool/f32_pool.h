// Per-ISA f32 pooling plane kernels behind include/dlas/algo/pool.h. One list:
// f32_pool.inc; bodies: f32_pool_template.h.
#pragma once

#include <cstdint>

#include "dlas/algo/pool.h"

namespace dlas::ukernel {

struct F32PoolKernels {
  // One plane [h][w] -> [oh][ow].
  void (*max_plane)(const PoolProblem& p, const float* x, float* y);
  void (*avg_plane)(const PoolProblem& p, bool count_include_pad, const float* x, float* y);
  // planes x [hw] -> planes means.
  void (*gavg_planes)(int64_t planes, int64_t hw, const float* x, float* y);
};

#define X(name, isa) extern const F32PoolKernels name;
#include "algo/microkernels/f32-pool/f32_pool.inc"
#undef X

const F32PoolKernels& f32_pool_for(Isa isa);

}  // namespace dlas::ukernel

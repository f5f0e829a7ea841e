// Blocked-layout pooling with an explicit kernel set (internal: the tests run the test-only
// 16-lane AVX2 set through these). p.c counts channels; the set's lanes are the block.
#pragma once

#include "algo/microkernels/f32-poolnchwc/f32_poolnchwc.h"
#include "dlas/algo/pool.h"

namespace dlas {

void max_pool_nchwc(const ukernel::F32PoolNchwcUkernels& k, const PoolProblem& p, const float* x,
                    float* y, ThreadPool& pool);
void average_pool_nchwc(const ukernel::F32PoolNchwcUkernels& k, const PoolProblem& p,
                        bool count_include_pad, const float* x, float* y, ThreadPool& pool);
void global_average_pool_nchwc(const ukernel::F32PoolNchwcUkernels& k, int64_t n, int64_t c,
                               int64_t hw, const float* x, float* y, ThreadPool& pool);

}  // namespace dlas

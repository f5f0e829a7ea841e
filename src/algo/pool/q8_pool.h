// MaxPool on 8-bit (u8 / s8) NCHW values, for int8 graphs (the max of quantized values is the
// quantized max: scale > 0). Every window must hold a tap inside the input (pads smaller
// than the kernel's extent: the caller checks, lower_pool.cc).
#pragma once

#include "dlas/algo/pool.h"

namespace dlas {

void max_pool_8bit(const PoolProblem& p, bool is_signed, const void* x, void* y, ThreadPool& pool);

}  // namespace dlas

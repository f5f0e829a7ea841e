// Static memory planning: every activation tensor gets a fixed offset in one
// arena. Greedy by size (largest first, each at the lowest offset that does not
// overlap a placed tensor alive at the same time), the strategy TFLite's arena
// planner popularised; optimal on chains, near-optimal on CNN DAGs.
#pragma once

#include <cstddef>
#include <vector>

namespace dlas {

struct BufferLifetime {
  size_t bytes = 0;
  int first = 0, last = 0;  // step indices (inclusive) where the buffer is live
};

struct MemoryPlan {
  std::vector<size_t> offsets;  // per buffer, 64-byte aligned
  size_t arena_bytes = 0;
};

// reuse == false: each buffer gets its own region (the opt-level 0 baseline).
MemoryPlan plan_memory(const std::vector<BufferLifetime>& buffers, bool reuse);

}  // namespace dlas

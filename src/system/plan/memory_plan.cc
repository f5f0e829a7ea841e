#include "system/plan/memory_plan.h"

#include <algorithm>
#include <numeric>

namespace dlas {
namespace {
size_t align64(size_t n) { return (n + 63) / 64 * 64; }
}  // namespace

MemoryPlan plan_memory(const std::vector<BufferLifetime>& buffers, bool reuse) {
  MemoryPlan plan;
  plan.offsets.assign(buffers.size(), 0);
  if (!reuse) {
    for (size_t i = 0; i < buffers.size(); ++i) {
      plan.offsets[i] = plan.arena_bytes;
      plan.arena_bytes += align64(buffers[i].bytes);
    }
    return plan;
  }
  std::vector<size_t> order(buffers.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return buffers[a].bytes > buffers[b].bytes; });
  std::vector<size_t> placed;
  for (size_t i : order) {
    const BufferLifetime& b = buffers[i];
    // Intervals [offset, offset + size) of placed buffers alive at the same time.
    std::vector<std::pair<size_t, size_t>> busy;
    for (size_t j : placed) {
      const BufferLifetime& o = buffers[j];
      if (o.last < b.first || b.last < o.first) continue;
      busy.push_back({plan.offsets[j], plan.offsets[j] + align64(o.bytes)});
    }
    std::sort(busy.begin(), busy.end());
    size_t offset = 0;
    const size_t need = align64(b.bytes);
    for (const auto& [lo, hi] : busy) {
      if (lo >= offset + need) break;  // fits in the gap before this interval
      offset = std::max(offset, hi);
    }
    plan.offsets[i] = offset;
    plan.arena_bytes = std::max(plan.arena_bytes, offset + need);
    placed.push_back(i);
  }
  return plan;
}

}  // namespace dlas

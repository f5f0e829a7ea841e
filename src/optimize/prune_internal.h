// Shared by the pruning translation units (weight/block in prune.cc, channels in
// channel_prune.cc); not a public header.
#pragma once

#include <cstdint>
#include <vector>

#include "dlas/optimize/prune.h"

namespace dlas::prune_detail {

// The prunable weights in node order (each initializer once), with first conv / classifier
// marked as kept unless asked otherwise.
std::vector<PruneLayer> find_layers(const Graph& g, bool prune_first, bool prune_classifier);

// Fills the layers' zeros and the report's params/zeros totals from the graph's weights.
void tally(const Graph& g, PruneReport& r);

// round(sparsity * n), at most n.
int64_t target_count(double sparsity, int64_t n);

// Channel pruning (spec.method == kChannel), already validated by prune().
PruneReport prune_channels(Graph& graph, const PruneSpec& spec);

}  // namespace dlas::prune_detail

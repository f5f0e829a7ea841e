#include "dlas/optimize/weight_formats.h"

#include <map>

#include "dlas/core/error.h"

namespace dlas {

int64_t index_list_bytes(int64_t kept, int64_t n) {
  if (kept == n) return 0;
  return kept * (n <= 65536 ? 2 : 4);
}

namespace {

// The channel-pruning columns of one layer.
void add_channels(LayerFormatBytes& e, const PruneLayer& p, int64_t original_params) {
  e.channel = true;
  e.original_dense_bytes = original_params * static_cast<int64_t>(sizeof(float));
  e.out_kept = static_cast<int64_t>(p.kept_outputs.size());
  e.out_channels = p.out_channels;
  e.in_kept = static_cast<int64_t>(p.kept_inputs.size());
  e.in_channels = p.in_channels;
  e.index_bytes =
      index_list_bytes(e.out_kept, p.out_channels) + index_list_bytes(e.in_kept, p.in_channels);
  e.dense_index_bytes = e.dense_bytes + e.index_bytes;
}

}  // namespace

WeightFormats weight_formats(const Graph& g, const PruneReport* channels,
                             const PruneReport* original) {
  DLAS_CHECK(!channels == !original, ErrorKind::kInternal,
             "weight_formats: channel pruning needs the original weights too");
  std::map<std::string, int64_t> original_params;  // weight -> elements before pruning
  if (original)
    for (const PruneLayer& l : original->layers) original_params[l.weight] = l.params;
  const PruneReport r = describe_weights(g);
  WeightFormats w;
  w.channel = channels != nullptr;
  for (const PruneLayer& l : r.layers) {
    LayerFormatBytes e;
    e.node = l.node;
    e.op = l.op;
    e.params = l.params;
    e.zeros = l.zeros;
    e.sparsity = l.sparsity();
    e.dense_bytes = l.params * static_cast<int64_t>(sizeof(float));
    e.csr_bytes = static_cast<int64_t>(layer_sparse_bytes(g, l, {1, 1}));
    e.bsr4x1_bytes = static_cast<int64_t>(layer_sparse_bytes(g, l, {4, 1}));
    w.dense_bytes += e.dense_bytes, w.csr_bytes += e.csr_bytes, w.bsr4x1_bytes += e.bsr4x1_bytes;
    if (channels)
      for (const PruneLayer& p : channels->layers) {
        if (p.weight != l.weight) continue;
        add_channels(e, p, original_params.at(l.weight));
        w.original_dense_bytes += e.original_dense_bytes;
        w.dense_index_bytes += e.dense_index_bytes;
      }
    w.layers.push_back(std::move(e));
  }
  w.params = r.total_params;
  w.zeros = r.total_zeros;
  w.sparsity = r.total_sparsity();
  return w;
}

}  // namespace dlas

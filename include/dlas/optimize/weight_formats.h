// Bytes of a model's Conv/Gemm weights per storage format (DLAS layer 3 meets layer 4): dense,
// CSR and BSR 4x1 as dlas/algo/sparse.h stores them (one matrix per group), and after channel
// pruning the paper's "dense with an index list of kept channels" format: the shrunk dense
// weights plus the kept output and input channel indices of every side that lost channels,
// against the original dense bytes. `dlas info` reports it for compressed models.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "dlas/model/graph.h"
#include "dlas/optimize/prune.h"

namespace dlas {

struct LayerFormatBytes {
  std::string node, op;
  int64_t params = 0, zeros = 0;
  double sparsity = 0;
  int64_t dense_bytes = 0, csr_bytes = 0, bsr4x1_bytes = 0;
  // Channel pruning (WeightFormats::channel), for the layers it changed or kept:
  bool channel = false;
  int64_t original_dense_bytes = 0;
  int64_t out_kept = 0, out_channels = 0, in_kept = 0, in_channels = 0;
  int64_t index_bytes = 0;        // the kept channels' index lists
  int64_t dense_index_bytes = 0;  // dense_bytes + index_bytes
};

struct WeightFormats {
  std::vector<LayerFormatBytes> layers;  // every Conv/FusedConv/Gemm f32 weight, in node order
  int64_t params = 0, zeros = 0;
  double sparsity = 0;
  int64_t dense_bytes = 0, csr_bytes = 0, bsr4x1_bytes = 0;
  bool channel = false;  // channel pruning was given: the totals below are set
  int64_t original_dense_bytes = 0, dense_index_bytes = 0;

  // Compression ratios: dense (or, for channel pruning, original dense) bytes / the format's.
  double csr_ratio() const { return ratio(dense_bytes, csr_bytes); }
  double bsr4x1_ratio() const { return ratio(dense_bytes, bsr4x1_bytes); }
  double dense_index_ratio() const { return ratio(original_dense_bytes, dense_index_bytes); }
  static double ratio(int64_t a, int64_t b) {
    return b ? static_cast<double>(a) / static_cast<double>(b) : 0.0;
  }
};

// Bytes of an index list of `kept` out of `n` channels: uint16 entries when every index fits,
// int32 otherwise (as the sparse formats store column indices); none when nothing was removed
// (the list would be 0..n-1).
int64_t index_list_bytes(int64_t kept, int64_t n);

// The formats of `graph` as it is. With `channels` (the report of the channel pruning that
// made `graph`) and `original` (describe_weights of the graph before it), also the dense +
// index lists format against the original dense bytes.
WeightFormats weight_formats(const Graph& graph, const PruneReport* channels = nullptr,
                             const PruneReport* original = nullptr);

}  // namespace dlas

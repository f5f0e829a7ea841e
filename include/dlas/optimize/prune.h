// Weight pruning (DLAS layer 3): L1 magnitude pruning of the weights of Conv, FusedConv and
// Gemm nodes. The graph stays dense -- pruned weights become exact zeros in place -- and
// the masks are returned as data (PruneReport), so fine-tuning can re-apply them
// (apply_prune_masks) and sparse algorithms (include/dlas/algo/sparse.h) can drop the zeros.
//
// A layer's weights are viewed as a [rows][cols] matrix: row = output channel, column =
// reduction index (Conv: (c, ky, kx) of one group, so cols = C/g * KH * KW; Gemm: the
// input features, whichever way transB stores them).
//
// Spec syntax (DESIGN.md section 6, one part of --compress):
//   wp:S[:global|:layer]       unstructured: the fraction S of weights with the smallest |w|
//   bp:BxC:S[:global|:layer]   blocks of B output channels x C reduction indices (aligned to
//                              multiples of B and C; edge blocks are smaller), the fraction S
//                              of blocks with the smallest L1 norm
//   cp:S[:global|:layer]       channels: the fraction S of the prunable conv output channels
//                              with the smallest normalised filter L1 norm, physically removed
//                              (see "Channel pruning" below)
// S is in [0, 1). Scope global (default): one threshold over all prunable layers; layer:
// every prunable layer pruned to S on its own. The first conv (first Conv/FusedConv in
// topological order) and the classifier (last prunable node in topological order) stay
// dense unless prune_first / prune_classifier say otherwise.
//
// Channel pruning (cp) shrinks the graph instead of zeroing: a pruned output channel of a
// Conv (group 1) is removed from its weight and bias, from the BatchNormalization after it,
// from depthwise convs that follow it (their groups shrink) and from the input channels of
// every consumer Conv, or the input features of a Gemm reached through Flatten -- through
// any chain of channel-wise ops (Relu, Clip, Sigmoid, pools, Dropout, ...). Score: the L1
// norm of the channel's filter divided by the mean L1 norm of its layer's filters (so 1 is
// an average channel of any layer, whatever its fan-in). A conv whose channels reach
// anything else -- Add, Mul, Concat, Reshape, a grouped conv, a graph output -- keeps all
// its channels (residual and concat producers are not pruned in this version; the layer's
// note says why). Every layer keeps at least one channel, so S is the fraction of the
// prunable channels removed unless that bound caps it. The classifier's outputs are never
// pruned (prune_classifier has no effect); the first conv is kept unless prune_first.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "dlas/algo/sparse.h"
#include "dlas/model/graph.h"

namespace dlas {

enum class PruneMethod { kWeight, kBlock, kChannel };
enum class PruneScope { kGlobal, kLayer };

struct PruneSpec {
  PruneMethod method = PruneMethod::kWeight;
  double sparsity = 0;  // in [0, 1)
  SparseBlock block;    // kBlock: output channels x reduction indices; 1x1 otherwise
  PruneScope scope = PruneScope::kGlobal;
  bool prune_first = false;       // also prune the first conv
  bool prune_classifier = false;  // also prune the classifier

  // Canonical spec: "wp:0.9", "bp:4x1:0.9", "wp:0.9:layer" (scope only when not global).
  // prune_first / prune_classifier are not part of the spec string.
  std::string str() const;
};

// Parses one pruning spec (syntax above). Throws kInvalidInput naming the bad part
// ("bp:4x1:1.5: sparsity must be in [0, 1)").
PruneSpec parse_prune_spec(std::string_view text);

// Parses a --compress value: "dense" (nullopt) or parts joined by '+' of which at most one
// prunes, and returns the pruning part. Quantization parts (fp16, bf16, int8[:calibrator])
// are validated and left out: parse_compress (dlas/optimize/quantize.h) returns both parts.
// Anything else is kInvalidInput naming the part.
std::optional<PruneSpec> parse_compress_spec(std::string_view text);

// One weight tensor considered by prune().
struct PruneLayer {
  std::string node;            // the (first) node reading the weight
  std::string op;              // Conv, FusedConv or Gemm
  std::string weight;          // initializer name
  Shape shape;                 // the initializer's shape
  int64_t rows = 0, cols = 0;  // matrix view (see above)
  int64_t groups = 1;          // Conv groups (rows split evenly between them)
  bool transposed = false;     // Gemm with transB = 0: stored [cols][rows]
  bool pruned = false;         // false: kept dense (first conv / classifier)
  int64_t params = 0;          // elements
  int64_t zeros = 0;           // exact zeros after pruning (zeros already there included)
  // 1 = kept, 0 = pruned, one byte per element in the initializer's own layout; empty when
  // the layer was kept dense.
  std::vector<uint8_t> mask;

  // Channel pruning only (the paper's "dense with an index list of kept channels" format):
  // the layer's original output channels (Gemm: outputs) and input channels (Conv: channels
  // of its input tensor; Gemm: input features), and the indices kept, ascending -- all of
  // them for a side left alone. shape/params/rows/cols above describe the shrunk weight.
  int64_t out_channels = 0, in_channels = 0;
  std::vector<int64_t> kept_outputs, kept_inputs;
  std::string note;  // why a layer's outputs were not pruned ("feeds Add 'add1'", ...)

  double sparsity() const { return params ? static_cast<double>(zeros) / params : 0.0; }
};

struct PruneReport {
  PruneSpec spec;
  std::vector<PruneLayer> layers;  // every Conv/FusedConv/Gemm f32 weight, in node order
  int64_t prunable_params = 0, prunable_zeros = 0;  // layers with pruned == true
  int64_t total_params = 0, total_zeros = 0;        // all layers
  // Channel pruning: output channels of the prunable layers, and how many were removed;
  // the graph's parameters and MACs before and after.
  int64_t prunable_channels = 0, pruned_channels = 0;
  int64_t params_before = 0, params_after = 0, macs_before = 0, macs_after = 0;

  // What the spec's S asks for: zeros / params over the pruned layers, or for channel
  // pruning removed / prunable channels.
  double sparsity() const {
    if (spec.method == PruneMethod::kChannel)
      return prunable_channels ? static_cast<double>(pruned_channels) / prunable_channels : 0.0;
    return prunable_params ? static_cast<double>(prunable_zeros) / prunable_params : 0.0;
  }
  // Dense MACs / pruned MACs: channel pruning's expected speedup (1 otherwise).
  double mac_ratio() const {
    return macs_after > 0 ? static_cast<double>(macs_before) / macs_after : 1.0;
  }
  double total_sparsity() const {
    return total_params ? static_cast<double>(total_zeros) / total_params : 0.0;
  }
};

// Prunes the graph's weights in place (each pruned initializer is replaced by a pruned copy,
// so tensors shared with other graphs are left alone). Unstructured pruning hits exactly
// round(S * n) pruned weights (n: prunable weights, globally or per layer), ties at the
// threshold broken by layer order then element order; block pruning exactly round(S * b)
// pruned blocks (b: blocks). Channel pruning removes exactly round(S * c) channels (c:
// prunable channels, globally or per layer) unless one-channel-per-layer caps it, ties
// broken by layer order then channel order; the graph is re-inferred afterwards (shape
// inference validates the shrunk model) and the report's layers have no masks.
PruneReport prune(Graph& graph, const PruneSpec& spec);

// Describes the graph's prunable weights as they are (zeros counted, no masks): what
// `dlas info` reports for an already pruned model. pruned is true for the layers a spec
// with these flags would prune.
PruneReport describe_weights(const Graph& graph, bool prune_first = false,
                             bool prune_classifier = false);

// Zeroes again the weights a report's masks prune (after a fine-tuning step changed them).
// Throws kInvalidInput when a weight is missing or its shape changed.
void apply_prune_masks(Graph& graph, const PruneReport& report);

// The layer's weights as the dense [rows][cols] matrix of group g ([rows/groups][cols]).
std::vector<float> layer_matrix(const Graph& graph, const PruneLayer& layer, int64_t group);

// Bytes of one layer's weights in a sparse format (summed over its groups, one matrix each,
// as the sparse algorithms store them).
size_t layer_sparse_bytes(const Graph& graph, const PruneLayer& layer, SparseBlock block);

}  // namespace dlas

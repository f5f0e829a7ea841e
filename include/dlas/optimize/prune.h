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
//   cp:S[:global|:layer][:roundN]  channels: the fraction S of the prunable conv output
//                              channels with the smallest normalised filter L1 norm, physically
//                              removed (see "Channel pruning" below); roundN rounds every
//                              group's kept count up to a multiple of N
// S is in [0, 1). Scope global (default): one threshold over all prunable layers; layer:
// every prunable layer pruned to S on its own. The first conv (first Conv/FusedConv in
// topological order) and the classifier (last prunable node in topological order) stay
// dense unless prune_first / prune_classifier say otherwise.
//
// Channel pruning (cp) shrinks the graph instead of zeroing. Channels are pruned by
// dependency group: the output channels of group-1 Convs that must go together. A group
// starts at one conv's outputs and follows them through channel-wise ops (Relu, Clip,
// Sigmoid, pools, Dropout, ...), BatchNormalization and depthwise convs (one filter per
// channel; their filters, bias and group shrink with the channels); an Add/Sub/Mul/Div of
// two such values joins their groups channel by channel -- ResNet's residual adds put the
// second conv of every block of a stage and the stage's shortcut conv in one group,
// EfficientNet's squeeze-excite Mul puts the SE expand conv (fc2) in the group of the
// block's expand conv, SiLU (x * Sigmoid(x)) joins a group with itself. A Concat (axis 1)
// maps each producer's channels to a range of its output, so a pruned producer shrinks its
// range (DenseNet: concat outputs feed BNs, convs and later concats). Everything the kept
// channels reach is cut accordingly: BNs after adds and concats, the input channels of
// every group-1 conv, and through Flatten the H*W input features per channel of a Gemm.
// A group is kept whole when its channels reach what cannot shrink with them (a graph
// output, Reshape, a grouped non-depthwise conv, a per-channel constant, an Add of values
// whose concat segments do not line up, ...) or are tied to a conv that is not pruned (the
// first conv unless prune_first, the classifier, a conv with a shared weight); the
// members' note says why. The classifier's outputs are never pruned (prune_classifier has
// no effect).
// Scores and counting: a conv channel's score is the L1 norm of its filter divided by the
// mean filter L1 norm of its layer (1 = an average channel of any layer, whatever its
// fan-in); a group channel's score is the mean over the group's convs. The unit counted is
// one group channel, however many convs share it: prunable_channels is the sum of the
// prunable groups' widths, pruned_channels the group channels removed, and exactly
// round(S * c) go (c: prunable channels, globally or per group with :layer), ties broken by
// group order (of each group's first conv) then channel order, unless the rule that every
// group keeps at least one channel caps it, or roundN adds channels back (the highest-scored
// removed channels of each group, until its kept count is a multiple of N or all).
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
  int64_t channel_multiple = 1;   // kChannel: kept channels per group rounded up to a multiple

  // Canonical spec: "wp:0.9", "bp:4x1:0.9", "wp:0.9:layer" (scope only when not global),
  // "cp:0.8:round8" (rounding only when > 1).
  // prune_first / prune_classifier are not part of the spec string.
  std::string str() const;
};

// Parses one pruning spec (syntax above). Throws kInvalidInput naming the bad part
// ("bp:4x1:1.5: sparsity must be in [0, 1)").
PruneSpec parse_prune_spec(std::string_view text);

// Parses a --compress value: "dense" (nullopt) or parts joined by '+' of which at most one
// prunes, and returns the pruning part. Quantization parts (fp16, bf16, int8[:calibrator])
// are validated and left out: parse_compress (dlas/optimize/compress_spec.h) returns both parts.
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

// Channel pruning: one prunable dependency group (see "Channel pruning" above).
struct ChannelGroup {
  std::vector<std::string> convs;  // the member convs' nodes, in node order
  int64_t channels = 0;            // the group's width before pruning
  std::vector<int64_t> kept;       // its kept channels, ascending
};

struct PruneReport {
  PruneSpec spec;
  std::vector<PruneLayer> layers;  // every Conv/FusedConv/Gemm f32 weight, in node order
  int64_t prunable_params = 0, prunable_zeros = 0;  // layers with pruned == true
  int64_t total_params = 0, total_zeros = 0;        // all layers
  // Channel pruning: channels of the prunable dependency groups, and how many were removed;
  // the graph's parameters and MACs before and after.
  int64_t prunable_channels = 0, pruned_channels = 0;
  int64_t params_before = 0, params_after = 0, macs_before = 0, macs_after = 0;
  std::vector<ChannelGroup> groups;  // channel pruning: the prunable groups, in order

  // What the spec's S asks for: zeros / params over the pruned layers, or for channel
  // pruning removed / prunable group channels (one per group channel, see above).
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
// pruned blocks (b: blocks). Channel pruning removes exactly round(S * c) group channels
// (see "Channel pruning" above for the exceptions); the graph is re-inferred afterwards
// (shape inference validates the shrunk model) and the report's layers have no masks.
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

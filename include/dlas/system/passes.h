// Graph passes (DLAS layer 5). One file per pass under src/system/passes/.
#pragma once

#include "dlas/model/graph.h"

namespace dlas {

// Evaluates every node whose inputs are all constants (and Shape of a statically
// shaped value) with the reference kernels, turning its outputs into
// initializers; then removes nodes and initializers that no output depends on.
// Leaves the graph inferred. This is how exporter patterns such as
// Shape -> Gather -> Unsqueeze -> Concat -> Reshape collapse to static shapes.
void fold_constants(Graph& graph);

// Removes nodes and initializers that no graph output depends on.
void eliminate_dead_code(Graph& graph);

// Folds BatchNormalization into the Conv feeding it (when the Conv output has no
// other use and the statistics are constant): W' = W * s, B' = (B - mean) * s + beta
// with s = gamma / sqrt(var + eps), computed in double. Returns the number folded.
int fold_batchnorm(Graph& graph);

// Add(conv_out, r) with conv_out used only there and r shaped like it becomes a
// FusedConv with residual input r (the op computes act(conv + B + r)). Returns the count.
int fuse_residual_add(Graph& graph);

// Relu, Clip (constant bounds), Sigmoid, HardSigmoid, HardSwish and the exported SiLU
// pattern Mul(y, Sigmoid(y)) after a Conv/FusedConv without activation become its
// `activation`. Run after fuse_residual_add (the activation applies after the residual,
// as in ResNet's relu(conv + identity)). Returns the count.
int fuse_activation(Graph& graph);

// Quantized graphs (QDQ, as dlas quantize writes them, or imported): a (Fused)Conv reading
// DequantizeLinear'd 8-bit activations and constant s8 per-channel weights (zero point 0),
// with a constant s32 or f32 bias, an optional DequantizeLinear'd residual and a none /
// relu / clip activation, whose output goes only to a per-tensor QuantizeLinear, becomes
// one QFusedConv (the int8 conv of dlas/algo/qconv.h with requantization, clamp and
// residual fused); so does a QLinearConv with constant parameters and s8 weights (zero
// point 0). The Q -> DQ pairs between fused convs then disappear; a DQ -> MaxPool -> Q
// with equal parameters becomes a MaxPool on the 8-bit values. Other DQ / Q steps stay
// (float ops in between). Run after fuse_activation. Returns the number of QFusedConvs made.
int fuse_quantized_conv(Graph& graph);

// Evaluates DequantizeLinear nodes of constants (quantized weights no int8 op consumed),
// turning them into f32 initializers. Returns the count.
int fold_dequantize(Graph& graph);

// What optimize_graph did, for reports.
struct PassReport {
  int batchnorms_folded = 0, residuals_fused = 0, activations_fused = 0;
  int qconvs_fused = 0;
  int nodes_before = 0, nodes_after = 0;
};

// The pass list, by --opt-level: 0 nothing; 1 constant folding + dead-code elimination
// (and memory reuse in the plan) + folding the dequantization of weights no int8 op uses;
// 2 + BatchNorm folding; 3 + residual and activation fusion, then int8 conv fusion
// (fuse_quantized_conv). Leaves the graph inferred.
PassReport optimize_graph(Graph& graph, int opt_level);

}  // namespace dlas

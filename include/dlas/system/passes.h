// Graph passes (DLAS layer 5). One file per pass under src/system/passes/.
#pragma once

#include <string>
#include <vector>

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

// Removes Identity, inference Dropout and all-zero Pad nodes, their consumers reading the
// input instead (not where the output is a graph output). Returns the count.
int eliminate_identity(Graph& graph);

// A constant zero Pad of H and W (non-negative) read only by a Conv / FusedConv or an
// AveragePool (no auto_pad, no ceil_mode; one that counts its padding, or has none) becomes
// that node's padding; the pool then counts it (count_include_pad 1), as it averaged the
// padded zeros. Returns the number folded.
int fold_pad(Graph& graph);

// Drops the kernel taps of a Conv / FusedConv (constant weights, undilated) that read only
// its zero padding at every output position -- a 3x3 conv on a 1x1 plane becomes a 1x1
// conv -- shrinking its pads so the output is unchanged. Returns the number trimmed.
int trim_conv_taps(Graph& graph);

// Folds BatchNormalization into the Conv feeding it (when the Conv output has no
// other use and the statistics are constant): W' = W * s, B' = (B - mean) * s + beta
// with s = gamma / sqrt(var + eps), computed in double. Returns the number folded.
int fold_batchnorm(Graph& graph);

// Add(conv_out, r) with conv_out used only there and r shaped like it becomes a
// FusedConv with residual input r (the op computes act(conv + B + r)). Returns the count.
int fuse_residual_add(Graph& graph);

// An Einsum of two operands that is a batched matrix product (batch letters kept by both
// operands and the output, one row, one column and one reduction letter) becomes Transposes,
// a MatMul and a Transpose to the output's order where needed. Returns the number rewritten.
int einsum_to_matmul(Graph& graph);

// A decomposed GELU, Mul(Mul(x, Add(Erf(Div(x, sqrt 2)), 1)), 0.5) in any operand order of the
// Add and Muls (sqrt 2 as stored in x's type), every intermediate read once, becomes one ONNX
// Gelu node. Returns the number fused.
int fuse_gelu(Graph& graph);

// A LayerNorm as exporters decompose it below opset 17 -- ReduceMean over the last axis,
// Sub, Pow 2, ReduceMean, Add eps, Sqrt, Div, then an optional Mul by gamma and Add of beta
// (constant vectors of the last axis), every intermediate read only inside the pattern --
// becomes one LayerNormalization (axis -1). Returns the number fused.
int fuse_layer_norm(Graph& graph);

// Linear layers with their epilogue: a MatMul of an activation [..., K] by constant float
// weights [K, N], with what nothing else reads after it -- the bias Add of a constant of N
// columns, then (f32) a residual Add shaped like the output, then a Relu / Clip / Sigmoid /
// HardSigmoid / HardSwish / Gelu -- becomes one FusedMatMul: act(x W + B + R). Run after
// fuse_gelu. Returns the number fused.
int fuse_linear(Graph& graph);

// Relu, Clip (constant bounds), Sigmoid, HardSigmoid, HardSwish and the exported SiLU and
// HardSwish patterns Mul(y, Sigmoid(y)) and Mul(y, HardSigmoid(y)) (alpha 1/6, beta 1/2) after a
// Conv/FusedConv without activation become its `activation`. Run after fuse_residual_add (the
// activation applies after the residual, as in ResNet's relu(conv + identity)). Returns the count.
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

// Quantized Linear layers: a MatMul (or Gemm with transA = 0, alpha = beta = 1) reading a
// per-tensor DequantizeLinear'd 8-bit activation and constant s8 weights with per-column
// scales (zero point 0), with its bias (Gemm's C, or a constant Add of the output columns
// after a MatMul) and a Relu / Clip that nothing else reads, becomes one QFc: the exact int8
// product with an f32 output (dlas/algo/fully_connected.h's PreparedFullyConnectedQs8). Run
// after fuse_quantized_conv. Returns the number of QFcs made.
int fuse_quantized_fc(Graph& graph);

// A Mul by a constant vector of a Linear layer's output columns -- after a FusedMatMul, a
// MatMul by constant weights or a QFc with no activation or residual, on its output or
// behind a channels-first Transpose (perm 0,3,1,2) of it -- folds into the layer's weight
// columns (a QFc's per-column weight scales, when the factors are positive) and bias; the
// Mul disappears. ConvNeXt's layer scale. Run after fuse_quantized_fc. Returns the count.
int fold_linear_scale(Graph& graph);

// A per-tensor QuantizeLinear whose input is computed from one per-tensor DequantizeLinear'd
// 8-bit activation by pointwise float ops (Sigmoid, Mul, Clip, HardSwish, ... with constant
// scalar operands) that nothing else reads becomes one QLookup: a 256-entry table of the
// chain's results, computed by the reference kernels (SiLU between int8 convs: DQ, Sigmoid,
// Mul, Q -> one byte lookup). Run after fuse_quantized_conv. Returns the number of QLookups.
int fuse_quantized_lookup(Graph& graph);

// QuantizeLinear(Mul(x, g)) with a per-tensor constant scale and zero point, x an f32
// [N, C, H, W] activation and g f32 [N, C, 1, 1] (a squeeze-and-excitation gate), the
// product read by nothing else, becomes one QChannelScale(x, g, scale[, zp]): the gated
// activation quantized without its f32 product being stored. Run after
// fuse_quantized_lookup. Returns the count.
int fuse_channel_scale_quantize(Graph& graph);

// A BatchNormalization with constant statistics that no conv absorbed (a pre-activation norm)
// becomes one ChannelAffine(x0, ..., scale, shift) with the channel Concat that feeds it and
// the activation (Relu, Clip, Sigmoid, HardSwish, HardSigmoid) that follows it, when nothing
// else reads those values; a BatchNormalization with neither stays. Run after fold_batchnorm.
// Returns the number of ChannelAffines made.
int fuse_channel_affine(Graph& graph);

// Evaluates DequantizeLinear nodes of constants (quantized weights no int8 op consumed),
// turning them into f32 initializers. Returns the count.
int fold_dequantize(Graph& graph);

// What optimize_graph did, for reports.
struct PassReport {
  int batchnorms_folded = 0, residuals_fused = 0, activations_fused = 0;
  int qconvs_fused = 0, qfcs_fused = 0, lookups_fused = 0, affines_fused = 0;
  int linears_fused = 0;
  int nodes_before = 0, nodes_after = 0;
};

// One row of the pass list: a pass, the lowest --opt-level that runs it, and where
// optimize_graph reports the number of rewrites it made.
struct GraphPass {
  const char* name;        // the pass's function name: "fold_batchnorm"
  int opt_level;           // runs at this --opt-level and above
  int (*run)(Graph&);      // the pass; returns its count of rewrites (0 when it keeps none)
  int PassReport::*count;  // the PassReport field for that count; nullptr: not reported
};

// The pass list, in the order the passes run: 1 constant folding + dead-code elimination
// (and memory reuse in the plan); 2 + BatchNorm folding; 3 + residual, GELU, LayerNorm,
// Linear-layer epilogue (fuse_linear) and activation fusion,
// the remaining BatchNorms as channel affines (fuse_channel_affine), then int8 conv fusion
// (fuse_quantized_conv), int8 Linear fusion (fuse_quantized_fc), lookup fusion
// (fuse_quantized_lookup) and gated quantization
// (fuse_channel_scale_quantize); 1 + last, folding the
// dequantization of weights no int8 op uses. Level 0 runs nothing.
const std::vector<GraphPass>& graph_passes();

struct PassOptions {
  int opt_level = 3;  // 0..3: the passes whose opt_level is at most this one run
  // Non-empty: a lowering log, as Halide's. The folder (created when missing) receives the
  // graph as text (Graph::to_string) before the passes, "00-input.txt", and after each pass
  // that runs, "NN-<name>.txt" with NN its 1-based place in graph_passes(). Each
  // optimize_graph call rewrites the files; the graph itself is unaffected.
  std::string dump_dir;
};

// Runs the pass list on `graph`. Leaves the graph inferred. Throws kUsage for an opt level
// outside 0..3, kInvalidInput when dump_dir cannot be written.
PassReport optimize_graph(Graph& graph, const PassOptions& options);
// The same with dump_dir taken from the environment variable DLAS_DUMP_PASSES (when set
// and not empty), so any command that compiles a model can log its passes.
PassReport optimize_graph(Graph& graph, int opt_level);

}  // namespace dlas

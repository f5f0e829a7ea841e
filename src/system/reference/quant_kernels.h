// Internal: the QFusedConv node (src/model/ops/nn_ops.cc) as a ConvProblem, shared by its
// reference kernel (quant_kernels.cc) and its engine lowering (src/system/plan/lower_qconv.cc).
#pragma once

#include <vector>

#include "dlas/algo/qconv.h"
#include "dlas/model/graph.h"

namespace dlas::reference {

// The conv geometry of a 2-D QFusedConv / QLinearConv node (explicit pads only; kUnsupported
// otherwise) with its fused epilogue.
ConvProblem qfused_conv_shape(const Node& node, const Shape& x, const Shape& w, bool has_bias,
                              bool has_residual);
// The whole int8 problem of a QFusedConv: geometry plus the quantization attributes.
// Validated (kInvalidInput / kUnsupported naming the problem).
ConvProblem qfused_conv_problem(const Node& node, const Shape& x, const Shape& w, DType x_type,
                                bool has_bias, DType r_type, bool has_residual);
// The node's per-output-channel weight scales (a single value is broadcast to k).
std::vector<float> qfused_conv_w_scales(const Node& node, int64_t k);

}  // namespace dlas::reference

// Internal: the QFusedConv node (src/model/ops/nn_ops.cc) as a ConvProblem, and the QFc
// node's parameters, shared by their reference kernels (quant_kernels.cc) and their engine
// lowerings (src/system/plan/lower_conv.cc, lower_fc.cc).
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

// A QFc node's arithmetic (nn_ops.cc): k, n, the weight layout, one scale per output column
// (x_scale * w_scale[n], the float product) and the activation's clamp bounds.
struct QFcParams {
  int64_t k = 0, n = 0;
  bool trans_b = false;
  float x_scale = 1.f;
  int32_t x_zero_point = 0;
  std::vector<float> w_scale;  // [n]
  float lo = 0, hi = 0;        // -inf / +inf where the activation does not bound
  Epilogue epilogue;           // the activation (a clamp: lo / hi; else applied after)
};
QFcParams qfc_params(const Node& node, const Shape& w);

}  // namespace dlas::reference

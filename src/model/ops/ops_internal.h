// Internal: the op categories that make up the op table (op_table.cc).
#pragma once

#include <vector>

#include "dlas/model/op_schema.h"

namespace dlas::ops {

// Conv, BatchNormalization, pooling, Gemm, MatMul, Softmax, Pad, reductions, ...
void append_nn_ops(std::vector<OpSchema>& table);  // nn_ops.cc
// Unary/binary elementwise math and activations (with NumPy broadcasting).
void append_elementwise_ops(std::vector<OpSchema>& table);  // elementwise_ops.cc
// Shape manipulation and the constant patterns exporters emit (Reshape, Concat, Slice, ...).
void append_tensor_ops(std::vector<OpSchema>& table);  // tensor_ops.cc

}  // namespace dlas::ops

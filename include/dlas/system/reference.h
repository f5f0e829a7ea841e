// The reference interpreter (DLAS layer 5): one simple, obviously correct loop nest per
// graph op, run node by node. It is the runtime of ops without a fast kernel, the
// constant folder's evaluator and the oracle every fast kernel is tested against. It
// takes graph Nodes, so it lives in the system layer; the problem-level oracles
// (reference_qconv, reference_hconv) stay with their contracts in algo. The table in
// src/system/reference/kernel_table.cc is the one list of reference kernels.
#pragma once

#include <string_view>
#include <vector>

#include "dlas/core/tensor.h"
#include "dlas/model/graph.h"

namespace dlas::reference {

// Runs `node`. inputs[i] is undefined for an absent optional input. outputs are
// preallocated with the inferred dtype and shape (zero-filled) and are written in place.
using KernelFn = void (*)(const Node& node, const std::vector<Tensor>& inputs,
                          std::vector<Tensor>& outputs);

// nullptr when no reference kernel exists for the op.
KernelFn find_kernel(std::string_view op);

}  // namespace dlas::reference

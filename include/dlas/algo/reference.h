// Reference kernels (DLAS layer 4): one simple, obviously correct loop nest per
// op. They are the runtime of the foundation and the oracle every fast kernel
// is tested against. The table in src/algo/reference/kernel_table.cc is the
// one list of reference kernels.
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

// Internal: the reference kernel categories that make up kernel_table.cc.
#pragma once

#include <vector>

#include "dlas/system/reference.h"

namespace dlas::reference {

struct KernelEntry {
  const char* op;
  KernelFn fn;
};

void append_nn_kernels(std::vector<KernelEntry>& table);           // nn_kernels.cc
void append_elementwise_kernels(std::vector<KernelEntry>& table);  // elementwise_kernels.cc
void append_tensor_kernels(std::vector<KernelEntry>& table);       // tensor_kernels.cc
void append_quant_kernels(std::vector<KernelEntry>& table);        // quant_kernels.cc

}  // namespace dlas::reference

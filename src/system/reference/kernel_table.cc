// The one list of reference kernels: the categories below.
#include <string>
#include <unordered_map>

#include "system/reference/kernels_internal.h"

namespace dlas::reference {

KernelFn find_kernel(std::string_view op) {
  static const std::unordered_map<std::string, KernelFn> index = [] {
    std::vector<KernelEntry> t;
    append_nn_kernels(t);
    append_elementwise_kernels(t);
    append_tensor_kernels(t);
    append_quant_kernels(t);
    std::unordered_map<std::string, KernelFn> m;
    for (const auto& e : t) m[e.op] = e.fn;
    return m;
  }();
  auto it = index.find(std::string(op));
  return it == index.end() ? nullptr : it->second;
}

}  // namespace dlas::reference

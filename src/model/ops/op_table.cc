// The one list of supported ops: the categories below, in this order.
#include <unordered_map>

#include "model/ops/ops_internal.h"

namespace dlas {

const std::vector<OpSchema>& all_op_schemas() {
  static const std::vector<OpSchema> table = [] {
    std::vector<OpSchema> t;
    ops::append_nn_ops(t);
    ops::append_elementwise_ops(t);
    ops::append_tensor_ops(t);
    return t;
  }();
  return table;
}

const OpSchema* find_op_schema(std::string_view op) {
  static const std::unordered_map<std::string_view, const OpSchema*> index = [] {
    std::unordered_map<std::string_view, const OpSchema*> m;
    for (const OpSchema& s : all_op_schemas()) m[s.op] = &s;
    return m;
  }();
  auto it = index.find(op);
  return it == index.end() ? nullptr : it->second;
}

}  // namespace dlas

// Op schemas: for each supported op, its arity, shape/dtype inference and cost.
// The op table in src/model/ops/op_table.cc is the one list of supported ops.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "dlas/model/graph.h"

namespace dlas {

// What an op's infer function sees: the node, its inputs' types and constant values.
class InferContext {
 public:
  InferContext(const Graph& graph, const Node& node) : graph_(graph), node_(node) {}
  const Node& node() const { return node_; }
  const Graph& graph() const { return graph_; }
  int num_inputs() const { return static_cast<int>(node_.inputs.size()); }
  int num_outputs() const { return static_cast<int>(node_.outputs.size()); }
  // True when input i is given (present and not "").
  bool has_input(int i) const;
  const ValueInfo& input(int i) const;
  const Shape& shape(int i) const { return input(i).shape; }
  DType dtype(int i) const { return input(i).dtype; }
  int rank(int i) const { return static_cast<int>(shape(i).size()); }
  // Constant value of input i (an initializer), or nullptr.
  const Tensor* constant(int i) const;
  // Constant value of input i; fails (kUnsupported, naming the node) when it is not constant.
  const Tensor& require_constant(int i, std::string_view what) const;
  void set_output(int i, DType dtype, Shape shape);
  const std::vector<ValueInfo>& outputs() const { return outputs_; }

  // Throws Error(kInvalidInput, "<node label>: <message>").
  template <class... Args>
  [[noreturn]] void fail(Args&&... args) const {
    ::dlas::fail(ErrorKind::kInvalidInput, node_.label(), ": ", std::forward<Args>(args)...);
  }
  template <class... Args>
  void check(bool cond, Args&&... args) const {
    if (!cond) fail(std::forward<Args>(args)...);
  }
  // Normalises a possibly negative axis against rank r; fails when out of range.
  int normalize_axis(int64_t axis, int r) const;

 private:
  const Graph& graph_;
  const Node& node_;
  std::vector<ValueInfo> outputs_;
};

struct OpSchema {
  const char* op;
  int min_inputs, max_inputs;
  int min_outputs, max_outputs;
  void (*infer)(InferContext& ctx);
  // Multiply-accumulates of one node (nullptr: 0).
  int64_t (*macs)(const Graph& graph, const Node& node) = nullptr;
  // Input indices holding non-trainable state (BatchNorm running mean/var).
  std::vector<int> buffer_inputs = {};
};

// nullptr when the op is not supported.
const OpSchema* find_op_schema(std::string_view op);
// Every supported op, in table order.
const std::vector<OpSchema>& all_op_schemas();

// Trainable parameters one node reads: its float initializer inputs, minus the schema's
// buffer inputs (BatchNorm running statistics). The per-node view of Graph::param_count (a
// weight read by two nodes counts for both); `dlas info`'s per-layer table.
int64_t node_param_count(const Graph& graph, const Node& node);

}  // namespace dlas

// Graph IR (DLAS layer 2). Ops follow ONNX semantics (op_type names and
// attribute names are ONNX's), normalised at import so every static argument
// is an attribute or an initializer. A Graph is inferred (shapes, dtypes,
// topological order, validation) by infer(); errors name the node.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <variant>
#include <vector>

#include "dlas/core/tensor.h"

namespace dlas {

using Attribute = std::variant<int64_t, float, std::string, std::vector<int64_t>,
                               std::vector<float>, std::vector<std::string>, Tensor>;

// Name of the alternative held: "int", "float", "string", "ints", "floats", "strings", "tensor".
const char* attribute_type_name(const Attribute& a);

struct Node {
  std::string name;                 // unique within the graph
  std::string op;                   // ONNX op_type, e.g. "Conv"
  std::vector<std::string> inputs;  // value names; "" marks an absent optional input
  std::vector<std::string> outputs;
  std::map<std::string, Attribute> attrs;

  bool has_attr(std::string_view key) const { return attrs.count(std::string(key)) != 0; }
  // Typed getters; a present attribute of the wrong type throws kInvalidInput naming the node.
  int64_t attr_int(std::string_view key, int64_t fallback) const;
  float attr_float(std::string_view key, float fallback) const;
  std::string attr_string(std::string_view key, const std::string& fallback) const;
  std::vector<int64_t> attr_ints(std::string_view key, const std::vector<int64_t>& fallback) const;
  std::vector<float> attr_floats(std::string_view key, const std::vector<float>& fallback) const;
  const Tensor* attr_tensor(std::string_view key) const;  // nullptr when absent
  // "node 'conv1' (Conv)" -- the prefix of every error about this node.
  std::string label() const;
};

struct ValueInfo {
  std::string name;
  DType dtype = DType::kF32;
  Shape shape;
};

class Graph {
 public:
  std::string name = "graph";
  std::vector<ValueInfo> inputs;               // runtime inputs (initializers are not listed here)
  std::vector<std::string> outputs;            // names of graph outputs
  std::vector<Node> nodes;                     // topologically ordered after infer()
  std::map<std::string, Tensor> initializers;  // weights and other constants
  // The model's key/value metadata (ONNX ModelProto.metadata_props), in file order: read and
  // written by the ONNX importer/exporter, kept by passes and compression. dlas stores the
  // preprocessing a model expects under "dlas.preprocess" (dlas/system/preprocess_meta.h);
  // other keys are carried through untouched.
  std::vector<std::pair<std::string, std::string>> metadata;
  // The value of metadata key `key`, or nullptr.
  const std::string* metadata_value(std::string_view key) const;
  // Sets (replacing, or appending) metadata key `key`.
  void set_metadata(const std::string& key, std::string value);

  // Sorts nodes topologically, validates (unique names, defined inputs, arity,
  // attributes) and infers every value's dtype and shape. Throws Error naming the node.
  void infer();
  // Validates the graph inputs and resets the value table to inputs + initializers;
  // infer() starts with it, passes that infer node by node call it first.
  void begin_inference();
  // Infers one node whose inputs are already known (used by passes that fold as they go).
  void infer_node(size_t index);
  // Sorts nodes topologically; throws on cycles or undefined inputs.
  void topo_sort();

  bool has_value(std::string_view name) const;
  const ValueInfo& value(std::string_view name) const;  // throws kInternal when unknown
  const Tensor* constant(std::string_view name) const;  // initializer or nullptr
  const std::unordered_map<std::string, ValueInfo>& values() const { return values_; }
  void set_value(ValueInfo info);

  // Trainable parameters (PyTorch's parameters(): excludes BatchNorm running statistics
  // and non-float constants).
  int64_t param_count() const;
  // The same parameters, exact zeros left out: pruning keeps weights as dense tensors with
  // zeros, so this is what a sparse format stores.
  int64_t nonzero_param_count() const;
  // Multiply-accumulates of Conv, ConvTranspose, Gemm and MatMul nodes.
  int64_t macs() const;
  int64_t node_macs(const Node& node) const;
  // Bytes of all initializers.
  int64_t weight_bytes() const;

  // Makes a node name not yet used ("prefix", "prefix_1", ...).
  std::string unique_node_name(const std::string& prefix) const;
  // Makes a value name not yet used.
  std::string unique_value_name(const std::string& prefix) const;

  // Human-readable listing: inputs, one line per node with op, attributes and shapes.
  std::string to_string() const;

 private:
  std::unordered_map<std::string, ValueInfo> values_;
};

}  // namespace dlas

// ONNX ModelProto -> dlas::Graph, normalising opsets 1-18 into the IR's opset-13
// forms (static arguments that older opsets carried as attributes become
// constant inputs; legacy broadcasting and coerce-to-2D softmax are rewritten).
#include <climits>
#include <cmath>
#include <filesystem>
#include <optional>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include <onnx/onnx_pb.h>

#include "dlas/core/npy.h"
#include "dlas/model/onnx.h"
#include "dlas/model/op_schema.h"
#include "model/onnx/onnx_tensor.h"

namespace dlas {
namespace {

constexpr int64_t kMinOpset = 1;
constexpr int64_t kMaxOpset = 18;

// What the model itself says about a value (graph inputs/outputs, value_info,
// initializers): used only where a normalisation needs a rank or a dtype.
struct TypeHint {
  std::optional<DType> dtype;
  std::optional<int> rank;
};

const char* type_case_name(const onnx::TypeProto& t) {
  switch (t.value_case()) {
    case onnx::TypeProto::kTensorType:
      return "a tensor";
    case onnx::TypeProto::kSequenceType:
      return "a sequence";
    case onnx::TypeProto::kMapType:
      return "a map";
    case onnx::TypeProto::kOptionalType:
      return "an optional";
    case onnx::TypeProto::kSparseTensorType:
      return "a sparse tensor";
    default:
      return "an untyped value";
  }
}

bool is_default_domain(const std::string& domain) { return domain.empty() || domain == "ai.onnx"; }

class Importer {
 public:
  Importer(const onnx::ModelProto& model, const OnnxImportOptions& options)
      : model_(model), options_(options) {}

  Graph run();

 private:
  void read_opset();
  void read_initializers();
  void collect_hints();
  void read_inputs();
  void read_outputs();
  void reserve_names();
  void import_node(const onnx::NodeProto& np, size_t index);
  Attribute convert_attribute(const Node& node, const onnx::AttributeProto& a);
  void constant_to_initializer(Node& node);

  // Opset normalisations; each edits `node` and may emit extra nodes before it.
  void normalise(Node& node);
  void legacy_broadcast(Node& node);
  void legacy_prelu(Node& node);
  void coerce_softmax(Node& node);
  void legacy_resize(Node& node);
  void attr_to_input(Node& node, const char* attr, size_t input_index, bool required);

  std::string new_value_name(const std::string& prefix);
  std::string new_node_name(const std::string& prefix);
  std::string add_constant(const std::string& prefix, Tensor value);
  std::optional<int> rank_of(const std::string& value) const;
  std::optional<DType> dtype_of(const std::string& value) const;
  void emit(Node node);
  void check_supported(const Node& node) const;

  const onnx::ModelProto& model_;
  const OnnxImportOptions& options_;
  Graph graph_;
  int64_t opset_ = 0;
  std::unordered_map<std::string, TypeHint> hints_;
  std::unordered_set<std::string> used_values_;
  std::unordered_set<std::string> used_nodes_;
  std::unordered_set<std::string> duplicate_nodes_;  // names ONNX gives to several nodes
  std::unordered_set<std::string> initializer_inputs_;
};

Graph Importer::run() {
  DLAS_CHECK(model_.has_graph(), ErrorKind::kInvalidInput, "the model has no graph");
  read_opset();
  const onnx::GraphProto& g = model_.graph();
  graph_.name = g.name().empty() ? "graph" : g.name();
  for (const auto& kv : model_.metadata_props()) graph_.set_metadata(kv.key(), kv.value());
  if (g.sparse_initializer_size() > 0)
    fail(ErrorKind::kUnsupported, "sparse initializer '", g.sparse_initializer(0).values().name(),
         "' is not supported");
  read_initializers();
  collect_hints();
  read_inputs();
  read_outputs();
  reserve_names();
  for (int i = 0; i < g.node_size(); ++i) import_node(g.node(i), static_cast<size_t>(i));
  return std::move(graph_);
}

void Importer::read_opset() {
  bool found = false;
  for (const auto& o : model_.opset_import()) {
    if (!is_default_domain(o.domain())) continue;
    DLAS_CHECK(!found, ErrorKind::kInvalidInput, "opset_import lists the default domain twice");
    found = true;
    opset_ = o.version();
  }
  if (!found) {
    // IR version 1-2 models predate opset_import; their ops are opset 1. Newer
    // models that import only other domains (e.g. training ops) get opset 0 and
    // fail on the first default-domain node.
    opset_ = model_.ir_version() > 0 && model_.ir_version() < 3 ? 1 : 0;
    return;
  }
  DLAS_CHECK(opset_ >= kMinOpset, ErrorKind::kInvalidInput, "invalid default-domain opset ",
             opset_);
  DLAS_CHECK(opset_ <= kMaxOpset, ErrorKind::kUnsupported, "opset ", opset_,
             " is newer than dlas supports (", kMinOpset, "-", kMaxOpset, ")");
}

void Importer::read_initializers() {
  for (const auto& init : model_.graph().initializer()) {
    DLAS_CHECK(!init.name().empty(), ErrorKind::kInvalidInput, "an initializer has no name");
    DLAS_CHECK(!graph_.initializers.count(init.name()), ErrorKind::kInvalidInput,
               "two initializers are named '", init.name(), "'");
    graph_.initializers[init.name()] =
        onnx_io::tensor_from_proto(init, str("initializer '", init.name(), "'"),
                                   options_.external_data_dir);
  }
}

void Importer::collect_hints() {
  auto add = [&](const onnx::ValueInfoProto& vi) {
    if (vi.name().empty() || !vi.type().has_tensor_type()) return;
    const auto& tt = vi.type().tensor_type();
    TypeHint& h = hints_[vi.name()];
    if (auto d = dtype_from_onnx(tt.elem_type())) h.dtype = d;
    if (tt.has_shape()) h.rank = tt.shape().dim_size();
  };
  const onnx::GraphProto& g = model_.graph();
  for (const auto& vi : g.value_info()) add(vi);
  for (const auto& vi : g.output()) add(vi);
  for (const auto& vi : g.input()) add(vi);
  for (const auto& [name, t] : graph_.initializers) hints_[name] = {t.dtype(), t.rank()};
}

void Importer::read_inputs() {
  std::set<std::string> runtime;
  for (const auto& vi : model_.graph().input()) {
    const std::string& name = vi.name();
    DLAS_CHECK(!name.empty(), ErrorKind::kInvalidInput, "a graph input has no name");
    if (graph_.initializers.count(name)) {
      initializer_inputs_.insert(name);
      continue;
    }
    DLAS_CHECK(runtime.insert(name).second, ErrorKind::kInvalidInput, "graph input '", name,
               "' is listed twice");
    const onnx::TypeProto& type = vi.type();
    DLAS_CHECK(type.value_case() != onnx::TypeProto::VALUE_NOT_SET, ErrorKind::kInvalidInput,
               "graph input '", name, "' has no type");
    DLAS_CHECK(type.has_tensor_type(), ErrorKind::kUnsupported, "graph input '", name, "' is ",
               type_case_name(type), ", which dlas does not support");
    const auto& tt = type.tensor_type();
    DLAS_CHECK(tt.elem_type() != 0, ErrorKind::kInvalidInput, "graph input '", name,
               "' has no element type");
    std::optional<DType> dtype = dtype_from_onnx(tt.elem_type());
    DLAS_CHECK(dtype.has_value(), ErrorKind::kUnsupported, "graph input '", name, "' has dtype ",
               onnx_io::onnx_dtype_name(tt.elem_type()), ", which dlas does not support");

    ValueInfo info{name, *dtype, {}};
    auto override_it = options_.input_shapes.find(name);
    if (override_it == options_.input_shapes.end() && runtime.size() == 1)
      override_it = options_.input_shapes.find("");  // an unnamed override is for the first input
    if (override_it != options_.input_shapes.end()) {
      const Shape& s = override_it->second;
      for (int64_t d : s)
        DLAS_CHECK(d >= 0, ErrorKind::kInvalidInput, "input shape ", shape_str(s),
                   " given for input '", name, "' has a negative dimension");
      DLAS_CHECK(!tt.has_shape() || tt.shape().dim_size() == static_cast<int>(s.size()),
                 ErrorKind::kInvalidInput, "input shape ", shape_str(s), " given for input '", name,
                 "' has rank ", s.size(), ", the model declares rank ", tt.shape().dim_size());
      info.shape = s;
    } else {
      DLAS_CHECK(tt.has_shape(), ErrorKind::kInvalidInput, "graph input '", name,
                 "' has an unknown shape; give one with --input-shape");
      const auto& dims = tt.shape().dim();
      for (int i = 0; i < dims.size(); ++i) {
        const auto& d = dims.Get(i);
        if (d.has_dim_value()) {
          DLAS_CHECK(d.dim_value() >= 0, ErrorKind::kInvalidInput, "graph input '", name,
                     "' has a negative dimension ", d.dim_value());
          info.shape.push_back(d.dim_value());
        } else if (i == 0) {
          info.shape.push_back(1);  // a dynamic batch dimension defaults to 1
        } else {
          fail(ErrorKind::kInvalidInput, "graph input '", name, "' has a dynamic dimension ", i,
               d.has_dim_param() ? str(" ('", d.dim_param(), "')") : std::string(),
               "; give a static shape with --input-shape");
        }
      }
    }
    graph_.inputs.push_back(std::move(info));
  }
  for (const auto& [name, shape] : options_.input_shapes) {
    if (runtime.count(name) || (name.empty() && !runtime.empty())) continue;
    if (graph_.initializers.count(name))
      fail(ErrorKind::kInvalidInput, "--input-shape names '", name,
           "', which is an initializer, not a runtime input");
    std::string names;
    for (const auto& n : runtime) names += (names.empty() ? "" : ", ") + n;
    fail(ErrorKind::kInvalidInput, "--input-shape names '", name,
         "', which is not an input of the model (inputs: ", names, ")");
  }
}

void Importer::read_outputs() {
  for (const auto& vi : model_.graph().output()) {
    DLAS_CHECK(!vi.name().empty(), ErrorKind::kInvalidInput, "a graph output has no name");
    const onnx::TypeProto& type = vi.type();
    if (type.value_case() != onnx::TypeProto::VALUE_NOT_SET) {
      DLAS_CHECK(type.has_tensor_type(), ErrorKind::kUnsupported, "graph output '", vi.name(),
                 "' is ", type_case_name(type), ", which dlas does not support");
      const int code = type.tensor_type().elem_type();
      DLAS_CHECK(code == 0 || dtype_from_onnx(code).has_value(), ErrorKind::kUnsupported,
                 "graph output '", vi.name(), "' has dtype ", onnx_io::onnx_dtype_name(code),
                 ", which dlas does not support");
    }
    graph_.outputs.push_back(vi.name());
  }
}

void Importer::reserve_names() {
  const onnx::GraphProto& g = model_.graph();
  for (const auto& vi : g.input()) used_values_.insert(vi.name());
  for (const auto& vi : g.output()) used_values_.insert(vi.name());
  for (const auto& vi : g.value_info()) used_values_.insert(vi.name());
  for (const auto& [name, t] : graph_.initializers) used_values_.insert(name);
  for (const auto& n : g.node()) {
    for (const auto& v : n.input()) used_values_.insert(v);
    for (const auto& v : n.output()) used_values_.insert(v);
    if (!n.name().empty() && !used_nodes_.insert(n.name()).second)
      duplicate_nodes_.insert(n.name());
  }
}

std::string Importer::new_value_name(const std::string& prefix) {
  std::string name = prefix;
  for (int i = 1; used_values_.count(name); ++i) name = str(prefix, "_", i);
  used_values_.insert(name);
  return name;
}

std::string Importer::new_node_name(const std::string& prefix) {
  std::string name = prefix;
  for (int i = 1; used_nodes_.count(name); ++i) name = str(prefix, "_", i);
  used_nodes_.insert(name);
  return name;
}

std::string Importer::add_constant(const std::string& prefix, Tensor value) {
  std::string name = new_value_name(prefix);
  hints_[name] = {value.dtype(), value.rank()};
  graph_.initializers[name] = std::move(value);
  return name;
}

std::optional<int> Importer::rank_of(const std::string& value) const {
  auto it = hints_.find(value);
  return it == hints_.end() ? std::nullopt : it->second.rank;
}

std::optional<DType> Importer::dtype_of(const std::string& value) const {
  auto it = hints_.find(value);
  return it == hints_.end() ? std::nullopt : it->second.dtype;
}

void Importer::check_supported(const Node& node) const {
  if (!find_op_schema(node.op))
    fail(ErrorKind::kUnsupported, node.label(), ": op '", node.op, "' is not supported");
}

void Importer::emit(Node node) {
  check_supported(node);
  graph_.nodes.push_back(std::move(node));
}

Attribute Importer::convert_attribute(const Node& node, const onnx::AttributeProto& a) {
  using AP = onnx::AttributeProto;
  int type = a.type();
  if (type == AP::UNDEFINED) {
    // Very old models leave `type` unset; infer it from the field that is present.
    if (a.has_f())
      type = AP::FLOAT;
    else if (a.has_i())
      type = AP::INT;
    else if (a.has_s())
      type = AP::STRING;
    else if (a.has_t())
      type = AP::TENSOR;
    else if (a.has_g())
      type = AP::GRAPH;
    else if (a.floats_size())
      type = AP::FLOATS;
    else if (a.ints_size())
      type = AP::INTS;
    else if (a.strings_size())
      type = AP::STRINGS;
    else if (a.graphs_size())
      type = AP::GRAPHS;
    else if (a.tensors_size())
      type = AP::TENSORS;
    else
      fail(ErrorKind::kInvalidInput, node.label(), ": attribute '", a.name(), "' has no type");
  }
  switch (type) {
    case AP::FLOAT:
      return a.f();
    case AP::INT:
      return static_cast<int64_t>(a.i());
    case AP::STRING:
      return a.s();
    case AP::TENSOR:
      return onnx_io::tensor_from_proto(a.t(), str(node.label(), ": attribute '", a.name(), "'"),
                                        options_.external_data_dir);
    case AP::FLOATS:
      return std::vector<float>(a.floats().begin(), a.floats().end());
    case AP::INTS:
      return std::vector<int64_t>(a.ints().begin(), a.ints().end());
    case AP::STRINGS:
      return std::vector<std::string>(a.strings().begin(), a.strings().end());
    case AP::GRAPH:
    case AP::GRAPHS:
      fail(ErrorKind::kUnsupported, node.label(), ": graph attribute '", a.name(),
           "' (control flow) is not supported");
    case AP::SPARSE_TENSOR:
    case AP::SPARSE_TENSORS:
      fail(ErrorKind::kUnsupported, node.label(), ": sparse tensor attribute '", a.name(),
           "' is not supported");
    default:
      fail(ErrorKind::kUnsupported, node.label(), ": attribute '", a.name(), "' of type ",
           AP::AttributeType_IsValid(type)
               ? AP::AttributeType_Name(static_cast<AP::AttributeType>(type))
               : str(type),
           " is not supported");
  }
}

void Importer::constant_to_initializer(Node& node) {
  DLAS_CHECK(node.outputs.size() == 1 && !node.outputs[0].empty(), ErrorKind::kInvalidInput,
             node.label(), ": expected one output");
  DLAS_CHECK(node.inputs.empty(), ErrorKind::kInvalidInput, node.label(), ": takes no inputs");
  DLAS_CHECK(node.attrs.size() == 1, ErrorKind::kInvalidInput, node.label(),
             ": expected exactly one value attribute, got ", node.attrs.size());
  const auto& [key, attr] = *node.attrs.begin();
  Tensor value;
  if (key == "value" && std::holds_alternative<Tensor>(attr)) {
    value = std::get<Tensor>(attr);
  } else if (key == "value_float" && std::holds_alternative<float>(attr)) {
    value = Tensor::scalar_f32(std::get<float>(attr));
  } else if (key == "value_floats" && std::holds_alternative<std::vector<float>>(attr)) {
    const auto& v = std::get<std::vector<float>>(attr);
    value = Tensor::from_vector<float>({static_cast<int64_t>(v.size())}, v);
  } else if (key == "value_int" && std::holds_alternative<int64_t>(attr)) {
    value = Tensor::from_vector<int64_t>({}, {std::get<int64_t>(attr)});
  } else if (key == "value_ints" && std::holds_alternative<std::vector<int64_t>>(attr)) {
    const auto& v = std::get<std::vector<int64_t>>(attr);
    value = Tensor::from_vector<int64_t>({static_cast<int64_t>(v.size())}, v);
  } else if (key == "value_string" || key == "value_strings") {
    fail(ErrorKind::kUnsupported, node.label(), ": string constants are not supported");
  } else {
    fail(ErrorKind::kInvalidInput, node.label(), ": unexpected attribute '", key, "' of type ",
         attribute_type_name(attr));
  }
  const std::string& out = node.outputs[0];
  DLAS_CHECK(!graph_.initializers.count(out), ErrorKind::kInvalidInput, node.label(), ": output '",
             out, "' is already an initializer");
  for (const ValueInfo& in : graph_.inputs)
    DLAS_CHECK(in.name != out, ErrorKind::kInvalidInput, node.label(), ": output '", out,
               "' is already a graph input");
  hints_[out] = {value.dtype(), value.rank()};
  graph_.initializers[out] = value;
}

void Importer::import_node(const onnx::NodeProto& np, size_t index) {
  Node node;
  node.op = np.op_type();
  DLAS_CHECK(!node.op.empty(), ErrorKind::kInvalidInput, "node ", index, " has no op_type");
  node.name = np.name().empty() ? new_node_name(str(node.op, "_", index)) : np.name();
  if (duplicate_nodes_.count(np.name())) {
    // Duplicate names are legal in ONNX; dlas needs unique ones.
    node.name = new_node_name(str(np.name(), "_", index));
  }
  if (!is_default_domain(np.domain()))
    fail(ErrorKind::kUnsupported, node.label(), ": domain '", np.domain(),
         "' is not supported (only the default ONNX domain)");
  DLAS_CHECK(opset_ > 0, ErrorKind::kInvalidInput, node.label(),
             ": uses the default ONNX domain, which opset_import does not list");
  node.inputs.assign(np.input().begin(), np.input().end());
  node.outputs.assign(np.output().begin(), np.output().end());
  while (!node.inputs.empty() && node.inputs.back().empty()) node.inputs.pop_back();
  while (!node.outputs.empty() && node.outputs.back().empty()) node.outputs.pop_back();
  for (const auto& a : np.attribute()) {
    DLAS_CHECK(!a.name().empty(), ErrorKind::kInvalidInput, node.label(),
               ": an attribute has no name");
    if (!a.ref_attr_name().empty())
      fail(ErrorKind::kUnsupported, node.label(), ": attribute '", a.name(),
           "' refers to a function attribute");
    DLAS_CHECK(!node.attrs.count(a.name()), ErrorKind::kInvalidInput, node.label(), ": attribute '",
               a.name(), "' is given twice");
    node.attrs[a.name()] = convert_attribute(node, a);
  }
  if (node.op == "Constant") {
    constant_to_initializer(node);
    return;
  }
  if (node.op == "Upsample") legacy_resize(node);  // becomes Resize
  check_supported(node);
  normalise(node);
}

// ---------------------------------------------------------------------------
// Opset normalisation.

Tensor s64_vector(const std::vector<int64_t>& v) {
  return Tensor::from_vector<int64_t>({static_cast<int64_t>(v.size())}, v);
}

// Moves attribute `attr` (ints) to input `input_index` as a constant s64 tensor.
void Importer::attr_to_input(Node& node, const char* attr, size_t input_index, bool required) {
  auto it = node.attrs.find(attr);
  if (it == node.attrs.end()) {
    DLAS_CHECK(!required, ErrorKind::kInvalidInput, node.label(), ": attribute '", attr,
               "' is required in opset ", opset_);
    return;
  }
  DLAS_CHECK(std::holds_alternative<std::vector<int64_t>>(it->second), ErrorKind::kInvalidInput,
             node.label(), ": attribute '", attr, "' must be ints, got ",
             attribute_type_name(it->second));
  DLAS_CHECK(node.inputs.size() <= input_index, ErrorKind::kInvalidInput, node.label(),
             ": has both an attribute '", attr, "' and input ", input_index);
  std::string name = add_constant(str(node.name, "_", attr),
                                  s64_vector(std::get<std::vector<int64_t>>(it->second)));
  node.inputs.resize(input_index + 1);
  node.inputs[input_index] = std::move(name);
  node.attrs.erase(it);
}

void Importer::normalise(Node& node) {
  const std::string& op = node.op;
  const int64_t v = opset_;
  node.attrs.erase("consumed_inputs");  // opset 1-5 memory hints

  static const std::set<std::string> kLegacyBroadcastOps = {
      "Add", "Sub", "Mul", "Div", "Pow", "And", "Or", "Xor", "Equal", "Greater", "Less"};
  if (v < 7 && kLegacyBroadcastOps.count(op)) legacy_broadcast(node);
  if (op == "Gemm" && v < 7) node.attrs.erase("broadcast");
  if (op == "PRelu" && v < 7) legacy_prelu(node);

  if (op == "BatchNormalization") {
    node.attrs.erase("is_test");
    if (node.has_attr("spatial")) {
      DLAS_CHECK(node.attr_int("spatial", 1) != 0, ErrorKind::kUnsupported, node.label(),
                 ": spatial=0 (per-activation statistics) is not supported");
      node.attrs.erase("spatial");
    }
    if (node.has_attr("training_mode")) {
      DLAS_CHECK(node.attr_int("training_mode", 0) == 0, ErrorKind::kUnsupported, node.label(),
                 ": training_mode=1 is not supported");
      node.attrs.erase("training_mode");
    }
  }
  if (op == "Dropout") {
    node.attrs.erase("is_test");
    if (v < 12) node.attrs.erase("ratio");
  }
  if ((op == "Unsqueeze" || op == "Squeeze") && v < 13)
    attr_to_input(node, "axes", 1, op == "Unsqueeze");
  if (op == "Split") {
    if (v < 13) attr_to_input(node, "split", 1, false);
    if (v >= 18 && node.has_attr("num_outputs")) {
      DLAS_CHECK(node.attr_int("num_outputs", 0) == static_cast<int64_t>(node.outputs.size()),
                 ErrorKind::kInvalidInput, node.label(), ": num_outputs does not match ",
                 node.outputs.size(), " outputs");
      node.attrs.erase("num_outputs");
    }
  }
  if (op == "Clip" && v < 11) {
    const DType dt =
        node.inputs.empty() ? DType::kF32 : dtype_of(node.inputs[0]).value_or(DType::kF32);
    node.inputs.resize(3);
    for (auto [attr, index] : {std::pair{"min", 1}, std::pair{"max", 2}}) {
      if (!node.has_attr(attr)) continue;
      const float bound = node.attr_float(attr, 0.f);
      node.inputs[index] =
          add_constant(str(node.name, "_", attr), Tensor::scalar_f32(bound).cast(dt));
      node.attrs.erase(attr);
    }
    while (!node.inputs.empty() && node.inputs.back().empty()) node.inputs.pop_back();
  }
  if (op == "Pad" && v < 11) {
    const char* pads_attr = node.has_attr("paddings") ? "paddings" : "pads";  // opset 1 name
    DLAS_CHECK(node.inputs.size() == 1, ErrorKind::kInvalidInput, node.label(),
               ": expected one input in opset ", v);
    attr_to_input(node, pads_attr, 1, true);
    if (node.has_attr("value")) {
      const DType dt = dtype_of(node.inputs[0]).value_or(DType::kF32);
      const float value = node.attr_float("value", 0.f);
      node.attrs.erase("value");
      if (value != 0.f)
        node.inputs.push_back(
            add_constant(str(node.name, "_value"), Tensor::scalar_f32(value).cast(dt)));
    }
  }
  if (op == "Slice" && v < 10) {
    DLAS_CHECK(node.inputs.size() == 1, ErrorKind::kInvalidInput, node.label(),
               ": expected one input in opset ", v);
    attr_to_input(node, "starts", 1, true);
    attr_to_input(node, "ends", 2, true);
    attr_to_input(node, "axes", 3, false);
  }
  if (op == "TopK" && v < 10) {
    DLAS_CHECK(node.has_attr("k"), ErrorKind::kInvalidInput, node.label(),
               ": attribute 'k' is required in opset ", v);
    const int64_t k = node.attr_int("k", 0);
    node.attrs.erase("k");
    node.inputs.resize(1);
    node.inputs.push_back(add_constant(str(node.name, "_k"), s64_vector({k})));
  }
  // Opset-10 Resize (an Upsample already rewritten has the attribute).
  if (op == "Resize" && v < 11 && !node.has_attr("coordinate_transformation_mode"))
    legacy_resize(node);
  if (op == "Reshape" && v < 5) {
    node.inputs.resize(1);
    attr_to_input(node, "shape", 1, true);
  }
  if (op == "Concat" && v < 4 && !node.has_attr("axis")) node.attrs["axis"] = int64_t{1};
  if (op == "Cast" && v < 6) {
    auto it = node.attrs.find("to");
    if (it != node.attrs.end() && std::holds_alternative<std::string>(it->second)) {
      onnx::TensorProto::DataType code;
      DLAS_CHECK(onnx::TensorProto::DataType_Parse(std::get<std::string>(it->second), &code),
                 ErrorKind::kInvalidInput, node.label(), ": unknown 'to' type '",
                 std::get<std::string>(it->second), "'");
      it->second = static_cast<int64_t>(code);
    }
  }
  if ((op == "Softmax" || op == "LogSoftmax" || op == "Hardmax") && v < 13) {
    coerce_softmax(node);
    return;  // emitted
  }
  emit(std::move(node));
}

// Opset < 7 Add/Mul/...: with broadcast=1 and `axis`, B's dims align with A's
// starting at `axis`; NumPy broadcasting aligns trailing dims. Unsqueeze B's tail.
void Importer::legacy_broadcast(Node& node) {
  const bool broadcast = node.attr_int("broadcast", 0) != 0;
  const bool has_axis = node.has_attr("axis");
  const int64_t axis = node.attr_int("axis", 0);
  node.attrs.erase("broadcast");
  node.attrs.erase("axis");
  if (!broadcast || !has_axis || node.inputs.size() != 2) return;
  const std::optional<int> rank_a = rank_of(node.inputs[0]);
  const std::optional<int> rank_b = rank_of(node.inputs[1]);
  if (!rank_a || !rank_b)
    fail(ErrorKind::kUnsupported, node.label(),
         ": legacy broadcasting with 'axis' needs the input ranks, which the model does not give");
  const int64_t a = axis < 0 ? axis + *rank_a : axis;
  DLAS_CHECK(a >= 0 && a + *rank_b <= *rank_a, ErrorKind::kInvalidInput, node.label(),
             ": broadcast axis ", axis, " does not fit ranks ", *rank_a, " and ", *rank_b);
  const int64_t trailing = *rank_a - a - *rank_b;
  if (trailing == 0) return;
  std::vector<int64_t> axes;
  for (int64_t i = 0; i < trailing; ++i) axes.push_back(*rank_b + i);
  Node unsq;
  unsq.op = "Unsqueeze";
  unsq.name = new_node_name(node.name + "_broadcast");
  unsq.inputs = {node.inputs[1], add_constant(unsq.name + "_axes", s64_vector(axes))};
  unsq.outputs = {new_value_name(node.inputs[1] + "_broadcast")};
  hints_[unsq.outputs[0]] = {dtype_of(node.inputs[1]), static_cast<int>(*rank_b + trailing)};
  node.inputs[1] = unsq.outputs[0];
  emit(std::move(unsq));
}

// Opset < 7 PRelu applies a 1-D slope per channel (dim 1); NumPy broadcasting
// would align it with the last dim, so reshape it to [C, 1, ..., 1].
void Importer::legacy_prelu(Node& node) {
  if (node.inputs.size() != 2) return;
  const std::optional<int> rank_x = rank_of(node.inputs[0]);
  const std::optional<int> rank_s = rank_of(node.inputs[1]);
  const Tensor* slope = graph_.constant(node.inputs[1]);
  if (rank_s == 1 && slope && slope->numel() == 1) return;
  if (rank_s && *rank_s != 1) return;  // already laid out for broadcasting
  if (!rank_x || !rank_s)
    fail(ErrorKind::kUnsupported, node.label(), ": opset-", opset_,
         " PRelu needs the input ranks, which the model does not give");
  if (*rank_x <= 2) return;
  std::vector<int64_t> axes;
  for (int i = 1; i < *rank_x - 1; ++i) axes.push_back(i);
  Node unsq;
  unsq.op = "Unsqueeze";
  unsq.name = new_node_name(node.name + "_slope");
  unsq.inputs = {node.inputs[1], add_constant(unsq.name + "_axes", s64_vector(axes))};
  unsq.outputs = {new_value_name(node.inputs[1] + "_per_channel")};
  hints_[unsq.outputs[0]] = {dtype_of(node.inputs[1]), *rank_x - 1};
  node.inputs[1] = unsq.outputs[0];
  emit(std::move(unsq));
}

// Upsample (opsets 7-9; 10 deprecates it) and opset-10 Resize take X and scales (an
// attribute before opset 9) and sample at x_out / scale: the opset-11 Resize with
// coordinate_transformation_mode "asymmetric" and, for nearest, nearest_mode "floor" (the
// index Upsample's documented examples use).
void Importer::legacy_resize(Node& node) {
  const bool upsample = node.op == "Upsample";
  DLAS_CHECK(!upsample || opset_ >= 7, ErrorKind::kUnsupported, node.label(), ": opset-", opset_,
             " Upsample (height_scale/width_scale) is not supported");
  DLAS_CHECK(node.outputs.size() == 1, ErrorKind::kInvalidInput, node.label(),
             ": expected one output");
  if (upsample && opset_ < 9) {
    DLAS_CHECK(node.inputs.size() == 1, ErrorKind::kInvalidInput, node.label(),
               ": expected one input in opset ", opset_);
    DLAS_CHECK(node.has_attr("scales"), ErrorKind::kInvalidInput, node.label(),
               ": attribute 'scales' is required in opset ", opset_);
    const std::vector<float> scales = node.attr_floats("scales", {});
    node.attrs.erase("scales");
    node.inputs.push_back(
        add_constant(str(node.name, "_scales"),
                     Tensor::from_vector<float>({static_cast<int64_t>(scales.size())}, scales)));
  }
  DLAS_CHECK(node.inputs.size() == 2, ErrorKind::kInvalidInput, node.label(),
             ": expected inputs X and scales, got ", node.inputs.size(), " inputs");
  std::string mode = node.attr_string("mode", "nearest");
  if (mode == "bilinear") mode = "linear";
  DLAS_CHECK(mode == "nearest" || mode == "linear", ErrorKind::kInvalidInput, node.label(),
             ": unknown mode '", mode, "'");
  node.op = "Resize";
  node.inputs = {node.inputs[0], "", node.inputs[1]};
  node.attrs["mode"] = mode;
  node.attrs["coordinate_transformation_mode"] = std::string("asymmetric");
  node.attrs["nearest_mode"] = std::string("floor");
}

// Opset < 13 Softmax/LogSoftmax/Hardmax flatten the input to 2-D at `axis`
// (default 1) and normalise over the second dimension. Same as axis=-1 when
// axis is the last dim; otherwise Flatten -> op(axis=-1) -> Reshape(Shape(x)).
void Importer::coerce_softmax(Node& node) {
  int64_t axis = node.attr_int("axis", 1);
  const std::optional<int> rank = node.inputs.empty() ? std::nullopt : rank_of(node.inputs[0]);
  if (rank && axis < 0) axis += *rank;
  if (axis == -1 || (rank && axis == *rank - 1)) {
    node.attrs["axis"] = int64_t{-1};
    emit(std::move(node));
    return;
  }
  DLAS_CHECK(node.inputs.size() == 1 && node.outputs.size() == 1, ErrorKind::kInvalidInput,
             node.label(), ": expected one input and one output");
  if (rank) {
    DLAS_CHECK(axis >= 0 && axis <= *rank, ErrorKind::kInvalidInput, node.label(), ": axis ",
               node.attr_int("axis", 1), " is out of range for rank ", *rank);
  } else {
    DLAS_CHECK(axis >= 0, ErrorKind::kUnsupported, node.label(), ": axis ", axis,
               " needs the input rank, which the model does not give");
  }
  const std::string x = node.inputs[0];
  const std::string y = node.outputs[0];
  Node shape;
  shape.op = "Shape";
  shape.name = new_node_name(node.name + "_shape");
  shape.inputs = {x};
  shape.outputs = {new_value_name(x + "_shape")};
  Node flatten;
  flatten.op = "Flatten";
  flatten.name = new_node_name(node.name + "_flatten");
  flatten.inputs = {x};
  flatten.outputs = {new_value_name(x + "_2d")};
  flatten.attrs["axis"] = axis;
  Node reshape;
  reshape.op = "Reshape";
  reshape.name = new_node_name(node.name + "_reshape");
  reshape.inputs = {new_value_name(y + "_2d"), shape.outputs[0]};
  reshape.outputs = {y};
  node.inputs = {flatten.outputs[0]};
  node.outputs = {reshape.inputs[0]};
  node.attrs["axis"] = int64_t{-1};
  for (const Node* n : {&shape, &flatten, &reshape})
    if (!find_op_schema(n->op))
      fail(ErrorKind::kUnsupported, node.label(), ": opset-", opset_, " ", node.op, " needs op '",
           n->op, "', which is not supported");
  emit(std::move(shape));
  emit(std::move(flatten));
  emit(std::move(node));
  emit(std::move(reshape));
}

Graph import_model(const onnx::ModelProto& model, const std::string& source_name,
                   const OnnxImportOptions& options) {
  try {
    return Importer(model, options).run();
  } catch (const Error& e) {
    throw Error(e.kind(), str(source_name, ": ", e.what()));
  }
}

}  // namespace

Graph import_onnx_bytes(std::string_view bytes, const std::string& source_name,
                        const OnnxImportOptions& options) {
  onnx::ModelProto model;
  if (bytes.size() > static_cast<size_t>(INT_MAX) ||
      !model.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) {
    fail(ErrorKind::kInvalidInput, source_name, ": not a valid ONNX model (protobuf parse failed)");
  }
  return import_model(model, source_name, options);
}

Graph import_onnx_file(const std::string& path, const OnnxImportOptions& options) {
  std::string bytes = read_file(path);  // kInvalidInput naming the file when missing
  OnnxImportOptions o = options;
  if (o.external_data_dir.empty()) {
    const std::filesystem::path dir = std::filesystem::path(path).parent_path();
    o.external_data_dir = dir.empty() ? "." : dir.string();
  }
  return import_onnx_bytes(bytes, path, o);
}

}  // namespace dlas

#include "dlas/model/graph.h"

#include <algorithm>
#include <queue>
#include <set>
#include <sstream>
#include <unordered_set>

#include "dlas/model/op_schema.h"

namespace dlas {

const char* attribute_type_name(const Attribute& a) {
  static const char* kNames[] = {"int", "float", "string", "ints", "floats", "strings", "tensor"};
  return kNames[a.index()];
}

namespace {
template <class T>
const T* get_attr(const Node& n, std::string_view key, const char* want) {
  auto it = n.attrs.find(std::string(key));
  if (it == n.attrs.end()) return nullptr;
  const T* v = std::get_if<T>(&it->second);
  if (!v)
    fail(ErrorKind::kInvalidInput, n.label(), ": attribute '", key, "' must be ", want, ", got ",
         attribute_type_name(it->second));
  return v;
}
}  // namespace

int64_t Node::attr_int(std::string_view key, int64_t fallback) const {
  const int64_t* v = get_attr<int64_t>(*this, key, "int");
  return v ? *v : fallback;
}
float Node::attr_float(std::string_view key, float fallback) const {
  auto it = attrs.find(std::string(key));
  if (it != attrs.end())
    if (const int64_t* i = std::get_if<int64_t>(&it->second)) return static_cast<float>(*i);
  const float* v = get_attr<float>(*this, key, "float");
  return v ? *v : fallback;
}
std::string Node::attr_string(std::string_view key, const std::string& fallback) const {
  const std::string* v = get_attr<std::string>(*this, key, "string");
  return v ? *v : fallback;
}
std::vector<int64_t> Node::attr_ints(std::string_view key,
                                     const std::vector<int64_t>& fallback) const {
  const auto* v = get_attr<std::vector<int64_t>>(*this, key, "ints");
  return v ? *v : fallback;
}
std::vector<float> Node::attr_floats(std::string_view key,
                                     const std::vector<float>& fallback) const {
  const auto* v = get_attr<std::vector<float>>(*this, key, "floats");
  return v ? *v : fallback;
}
const Tensor* Node::attr_tensor(std::string_view key) const {
  return get_attr<Tensor>(*this, key, "tensor");
}
std::string Node::label() const { return "node '" + name + "' (" + op + ")"; }

bool Graph::has_value(std::string_view n) const { return values_.count(std::string(n)) != 0; }

const ValueInfo& Graph::value(std::string_view n) const {
  auto it = values_.find(std::string(n));
  DLAS_CHECK(it != values_.end(), ErrorKind::kInternal, "graph has no value named '", n, "'");
  return it->second;
}

const Tensor* Graph::constant(std::string_view n) const {
  auto it = initializers.find(std::string(n));
  return it == initializers.end() ? nullptr : &it->second;
}

void Graph::set_value(ValueInfo info) {
  std::string key = info.name;
  values_[key] = std::move(info);
}

void Graph::topo_sort() {
  // Producers of each value; graph inputs and initializers have none.
  std::unordered_set<std::string> available;
  for (const auto& in : inputs) available.insert(in.name);
  for (const auto& [k, v] : initializers) available.insert(k);
  std::unordered_map<std::string, size_t> producer;
  std::unordered_set<std::string> node_names;
  for (size_t i = 0; i < nodes.size(); ++i) {
    const Node& n = nodes[i];
    DLAS_CHECK(!n.name.empty(), ErrorKind::kInvalidInput, "a ", n.op, " node has no name");
    DLAS_CHECK(node_names.insert(n.name).second, ErrorKind::kInvalidInput, "two nodes are named '",
               n.name, "'");
    for (const auto& o : n.outputs) {
      if (o.empty()) continue;
      DLAS_CHECK(!available.count(o) && !producer.count(o), ErrorKind::kInvalidInput, n.label(),
                 ": output '", o, "' is already defined elsewhere");
      producer[o] = i;
    }
  }
  std::vector<int> pending(nodes.size(), 0);
  std::vector<std::vector<size_t>> users(nodes.size());
  for (size_t i = 0; i < nodes.size(); ++i) {
    std::set<size_t> deps;
    for (const auto& in : nodes[i].inputs) {
      if (in.empty() || available.count(in)) continue;
      auto it = producer.find(in);
      DLAS_CHECK(it != producer.end(), ErrorKind::kInvalidInput, nodes[i].label(), ": input '", in,
                 "' is not produced by any node, graph input or initializer");
      deps.insert(it->second);
    }
    pending[i] = static_cast<int>(deps.size());
    for (size_t d : deps) users[d].push_back(i);
  }
  // Kahn's algorithm, stable: ready nodes leave in their original order.
  std::priority_queue<size_t, std::vector<size_t>, std::greater<>> ready;
  for (size_t i = 0; i < nodes.size(); ++i)
    if (pending[i] == 0) ready.push(i);
  std::vector<size_t> order;
  while (!ready.empty()) {
    size_t i = ready.top();
    ready.pop();
    order.push_back(i);
    for (size_t u : users[i])
      if (--pending[u] == 0) ready.push(u);
  }
  if (order.size() != nodes.size()) {
    for (size_t i = 0; i < nodes.size(); ++i)
      if (pending[i] > 0) fail(ErrorKind::kInvalidInput, nodes[i].label(), " is part of a cycle");
  }
  std::vector<Node> sorted;
  sorted.reserve(nodes.size());
  for (size_t i : order) sorted.push_back(std::move(nodes[i]));
  nodes = std::move(sorted);
}

void Graph::infer_node(size_t index) {
  const Node& n = nodes.at(index);
  const OpSchema* schema = find_op_schema(n.op);
  if (!schema) fail(ErrorKind::kUnsupported, n.label(), ": op '", n.op, "' is not supported");
  const int ni = static_cast<int>(n.inputs.size());
  const int no = static_cast<int>(n.outputs.size());
  DLAS_CHECK(ni >= schema->min_inputs && ni <= schema->max_inputs, ErrorKind::kInvalidInput,
             n.label(), ": has ", ni, " inputs, expected ", schema->min_inputs,
             schema->min_inputs == schema->max_inputs ? "" : str(" to ", schema->max_inputs));
  DLAS_CHECK(no >= schema->min_outputs && no <= schema->max_outputs, ErrorKind::kInvalidInput,
             n.label(), ": has ", no, " outputs, expected ", schema->min_outputs,
             schema->min_outputs == schema->max_outputs ? "" : str(" to ", schema->max_outputs));
  for (int i = 0; i < schema->min_inputs; ++i)
    DLAS_CHECK(!n.inputs[i].empty(), ErrorKind::kInvalidInput, n.label(), ": required input ", i,
               " is missing");
  InferContext ctx(*this, n);
  schema->infer(ctx);
  const auto& outs = ctx.outputs();
  for (int i = 0; i < no; ++i) {
    if (n.outputs[i].empty()) continue;
    DLAS_CHECK(i < static_cast<int>(outs.size()) && !outs[i].name.empty(), ErrorKind::kInternal,
               n.label(), ": inference did not set output ", i);
    set_value(outs[i]);
  }
}

void Graph::begin_inference() {
  values_.clear();
  std::unordered_set<std::string> seen;
  for (const auto& in : inputs) {
    DLAS_CHECK(!in.name.empty(), ErrorKind::kInvalidInput, "a graph input has no name");
    DLAS_CHECK(seen.insert(in.name).second, ErrorKind::kInvalidInput, "graph input '", in.name,
               "' is listed twice");
    DLAS_CHECK(!initializers.count(in.name), ErrorKind::kInvalidInput, "graph input '", in.name,
               "' is also an initializer");
    for (int64_t d : in.shape)
      DLAS_CHECK(d >= 0, ErrorKind::kInvalidInput, "graph input '", in.name,
                 "' has a dynamic or negative dimension in ", shape_str(in.shape),
                 "; give a static input shape");
    set_value(in);
  }
  for (const auto& [k, t] : initializers) set_value({k, t.dtype(), t.shape()});
}

void Graph::infer() {
  begin_inference();
  topo_sort();
  for (size_t i = 0; i < nodes.size(); ++i) infer_node(i);
  DLAS_CHECK(!outputs.empty(), ErrorKind::kInvalidInput, "graph '", name, "' has no outputs");
  for (const auto& o : outputs)
    DLAS_CHECK(has_value(o), ErrorKind::kInvalidInput, "graph output '", o,
               "' is not produced by any node, input or initializer");
}

namespace {
// Calls f(tensor) for every trainable parameter: float initializers that are not buffers.
template <class F>
void for_each_param(const Graph& g, F&& f) {
  std::unordered_set<std::string> buffers;
  for (const Node& n : g.nodes) {
    const OpSchema* s = find_op_schema(n.op);
    if (!s) continue;
    for (int i : s->buffer_inputs)
      if (i < static_cast<int>(n.inputs.size())) buffers.insert(n.inputs[i]);
  }
  for (const auto& [k, t] : g.initializers)
    if (is_float(t.dtype()) && !buffers.count(k)) f(t);
}
}  // namespace

int64_t Graph::param_count() const {
  int64_t total = 0;
  for_each_param(*this, [&](const Tensor& t) { total += t.numel(); });
  return total;
}

int64_t node_param_count(const Graph& g, const Node& n) {
  const OpSchema* s = find_op_schema(n.op);
  int64_t total = 0;
  for (size_t i = 0; i < n.inputs.size(); ++i) {
    const Tensor* t = g.constant(n.inputs[i]);
    if (!t || !is_float(t->dtype())) continue;
    const bool buffer = s && std::find(s->buffer_inputs.begin(), s->buffer_inputs.end(),
                                       static_cast<int>(i)) != s->buffer_inputs.end();
    if (!buffer) total += t->numel();
  }
  return total;
}

int64_t Graph::nonzero_param_count() const {
  int64_t total = 0;
  for_each_param(*this, [&](const Tensor& t) {
    for (int64_t i = 0; i < t.numel(); ++i) total += t.get_as_double(i) != 0.0;
  });
  return total;
}

int64_t Graph::node_macs(const Node& n) const {
  const OpSchema* s = find_op_schema(n.op);
  return (s && s->macs) ? s->macs(*this, n) : 0;
}

int64_t Graph::macs() const {
  int64_t total = 0;
  for (const Node& n : nodes) total += node_macs(n);
  return total;
}

int64_t Graph::weight_bytes() const {
  int64_t total = 0;
  for (const auto& [k, t] : initializers) total += static_cast<int64_t>(t.nbytes());
  return total;
}

const std::string* Graph::metadata_value(std::string_view key) const {
  for (const auto& [k, v] : metadata)
    if (k == key) return &v;
  return nullptr;
}

void Graph::set_metadata(const std::string& key, std::string value) {
  for (auto& [k, v] : metadata)
    if (k == key) {
      v = std::move(value);
      return;
    }
  metadata.emplace_back(key, std::move(value));
}

std::string Graph::unique_node_name(const std::string& prefix) const {
  std::unordered_set<std::string> used;
  for (const Node& n : nodes) used.insert(n.name);
  if (!used.count(prefix)) return prefix;
  for (int i = 1;; ++i) {
    std::string c = prefix + "_" + std::to_string(i);
    if (!used.count(c)) return c;
  }
}

std::string Graph::unique_value_name(const std::string& prefix) const {
  auto used = [&](const std::string& c) {
    if (values_.count(c) || initializers.count(c)) return true;
    for (const Node& n : nodes)
      for (const auto& o : n.outputs)
        if (o == c) return true;
    for (const auto& in : inputs)
      if (in.name == c) return true;
    return false;
  };
  if (!used(prefix)) return prefix;
  for (int i = 1;; ++i) {
    std::string c = prefix + "_" + std::to_string(i);
    if (!used(c)) return c;
  }
}

namespace {
std::string attr_str(const Attribute& a) {
  std::ostringstream os;
  std::visit(
      [&](const auto& v) {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, Tensor>) {
          os << v.describe();
        } else if constexpr (std::is_same_v<T, std::string>) {
          os << '"' << v << '"';
        } else if constexpr (std::is_same_v<T, int64_t> || std::is_same_v<T, float>) {
          os << v;
        } else {
          os << '[';
          for (size_t i = 0; i < v.size(); ++i) os << (i ? "," : "") << v[i];
          os << ']';
        }
      },
      a);
  return os.str();
}
}  // namespace

std::string Graph::to_string() const {
  std::ostringstream os;
  os << "graph " << name << "\n";
  for (const auto& in : inputs)
    os << "  input  " << in.name << ": " << dtype_name(in.dtype) << shape_str(in.shape) << "\n";
  os << "  " << initializers.size() << " initializers, " << param_count() << " parameters\n";
  for (const Node& n : nodes) {
    os << "  " << n.name << " = " << n.op << "(";
    for (size_t i = 0; i < n.inputs.size(); ++i) os << (i ? ", " : "") << n.inputs[i];
    os << ")";
    if (!n.attrs.empty()) {
      os << " {";
      bool first = true;
      for (const auto& [k, v] : n.attrs) {
        os << (first ? "" : ", ") << k << "=" << attr_str(v);
        first = false;
      }
      os << "}";
    }
    os << " ->";
    for (const auto& o : n.outputs) {
      os << " " << o;
      if (has_value(o)) os << ": " << dtype_name(value(o).dtype) << shape_str(value(o).shape);
    }
    os << "\n";
  }
  for (const auto& o : outputs) os << "  output " << o << "\n";
  return os.str();
}

}  // namespace dlas

// dlas::Graph -> ONNX ModelProto (IR version 8, default-domain opset 13, or the newer
// opset an op needs: 17 for LayerNormalization, 18 for Resize/Pad axes).
#include <algorithm>
#include <filesystem>
#include <set>
#include <type_traits>

#include <onnx/onnx_pb.h>

#include "dlas/core/file.h"
#include "dlas/core/version.h"
#include "dlas/model/onnx.h"
#include "model/onnx/onnx_tensor.h"

namespace dlas {
namespace {

constexpr int64_t kExportIrVersion = 8;
constexpr int64_t kBaseOpset = 13;

// Reductions whose axes moved from an attribute to an input in opset 18
// (ReduceSum moved in opset 13 already).
bool axes_input_from_18(const std::string& op) {
  return op == "ReduceMean" || op == "ReduceMax" || op == "ReduceMin" || op == "ReduceProd" ||
         op == "ReduceL1" || op == "ReduceL2" || op == "ReduceLogSum" || op == "ReduceLogSumExp" ||
         op == "ReduceSumSquare";
}

// The lowest opset that can express every node: 13 unless an op or form needs newer.
int64_t export_opset(const Graph& graph) {
  int64_t opset = kBaseOpset;
  for (const Node& n : graph.nodes) {
    if (n.op == "LayerNormalization") opset = std::max<int64_t>(opset, 17);
    if (n.op == "Resize" &&
        (n.has_attr("axes") || n.has_attr("antialias") || n.has_attr("keep_aspect_ratio_policy")))
      opset = 18;
    if (n.op == "Pad" && n.inputs.size() > 3 && !n.inputs[3].empty()) opset = 18;
  }
  return opset;
}

void set_value_info(const ValueInfo& info, onnx::ValueInfoProto* proto) {
  proto->set_name(info.name);
  auto* tt = proto->mutable_type()->mutable_tensor_type();
  tt->set_elem_type(dtype_to_onnx(info.dtype));
  auto* shape = tt->mutable_shape();
  for (int64_t d : info.shape) shape->add_dim()->set_dim_value(d);
}

void set_attribute(const std::string& name, const Attribute& value, const Node& node,
                   onnx::AttributeProto* proto) {
  using AP = onnx::AttributeProto;
  proto->set_name(name);
  std::visit(
      [&](const auto& v) {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, int64_t>) {
          proto->set_type(AP::INT);
          proto->set_i(v);
        } else if constexpr (std::is_same_v<T, float>) {
          proto->set_type(AP::FLOAT);
          proto->set_f(v);
        } else if constexpr (std::is_same_v<T, std::string>) {
          proto->set_type(AP::STRING);
          proto->set_s(v);
        } else if constexpr (std::is_same_v<T, std::vector<int64_t>>) {
          proto->set_type(AP::INTS);
          for (int64_t x : v) proto->add_ints(x);
        } else if constexpr (std::is_same_v<T, std::vector<float>>) {
          proto->set_type(AP::FLOATS);
          for (float x : v) proto->add_floats(x);
        } else if constexpr (std::is_same_v<T, std::vector<std::string>>) {
          proto->set_type(AP::STRINGS);
          for (const auto& x : v) proto->add_strings(x);
        } else {
          static_assert(std::is_same_v<T, Tensor>);
          DLAS_CHECK(v.defined(), ErrorKind::kInternal, node.label(), ": attribute '", name,
                     "' holds an undefined tensor");
          proto->set_type(AP::TENSOR);
          onnx_io::tensor_to_proto(v, "", proto->mutable_t());
        }
      },
      value);
}

// Where the initializers' bytes go: null for raw_data in the model, else an external data
// file (`location`, relative to the model's folder) built up in `bytes`.
struct ExternalData {
  std::string location;
  std::string bytes;
};

std::string serialise(const Graph& graph, ExternalData* external) {
  onnx::ModelProto model;
  model.set_ir_version(kExportIrVersion);
  model.set_producer_name("dlas");
  model.set_producer_version(DLAS_VERSION);
  const int64_t opset = export_opset(graph);
  auto* opset_import = model.add_opset_import();
  opset_import->set_domain("");
  opset_import->set_version(opset);
  for (const auto& [key, value] : graph.metadata) {
    auto* prop = model.add_metadata_props();
    prop->set_key(key);
    prop->set_value(value);
  }

  onnx::GraphProto* g = model.mutable_graph();
  g->set_name(graph.name);
  for (const ValueInfo& in : graph.inputs) set_value_info(in, g->add_input());
  for (const std::string& out : graph.outputs) {
    if (graph.has_value(out)) {
      set_value_info(graph.value(out), g->add_output());
    } else if (const Tensor* c = graph.constant(out)) {
      set_value_info({out, c->dtype(), c->shape()}, g->add_output());
    } else {
      fail(ErrorKind::kInternal, "export: graph output '", out,
           "' has no known type; infer the graph first");
    }
  }
  for (const auto& [name, t] : graph.initializers) {
    if (!external) {
      onnx_io::tensor_to_proto(t, name, g->add_initializer());
      continue;
    }
    external->bytes.resize((external->bytes.size() + 63) / 64 * 64, '\0');  // 64-byte aligned
    const auto offset = static_cast<int64_t>(external->bytes.size());
    external->bytes.append(static_cast<const char*>(t.raw()), t.nbytes());
    onnx_io::tensor_to_external_proto(t, name, external->location, offset, g->add_initializer());
  }
  std::set<std::string> added_names;
  for (const Node& node : graph.nodes) {
    // Reduction axes take the form the chosen opset expects (the IR accepts both).
    Node n = node;
    const bool axes_as_input = n.op == "ReduceSum" || (axes_input_from_18(n.op) && opset >= 18);
    if (axes_input_from_18(n.op) || n.op == "ReduceSum") {
      if (axes_as_input && n.has_attr("axes")) {
        std::string name = graph.unique_value_name(n.name + ".axes");
        while (!added_names.insert(name).second) name += "_";
        onnx_io::tensor_to_proto(
            Tensor::from_vector<int64_t>({static_cast<int64_t>(n.attr_ints("axes", {}).size())},
                                         n.attr_ints("axes", {})),
            name, g->add_initializer());
        n.attrs.erase("axes");
        n.inputs.resize(2);
        n.inputs[1] = name;
      } else if (!axes_as_input && n.inputs.size() > 1 && !n.inputs[1].empty()) {
        const Tensor* axes = graph.constant(n.inputs[1]);
        DLAS_CHECK(axes, ErrorKind::kUnsupported, n.label(),
                   ": axes must be constant to export at opset ", opset);
        n.attrs["axes"] = axes->to_int64_vector();
        n.inputs.resize(1);
      }
    }
    onnx::NodeProto* np = g->add_node();
    np->set_name(n.name);
    np->set_op_type(n.op);
    for (const auto& in : n.inputs) np->add_input(in);
    for (const auto& out : n.outputs) np->add_output(out);
    for (const auto& [key, value] : n.attrs) set_attribute(key, value, n, np->add_attribute());
    // Intermediate types help viewers and other runtimes; outputs are listed already.
    for (const auto& out : n.outputs) {
      if (out.empty() || !graph.has_value(out)) continue;
      if (std::find(graph.outputs.begin(), graph.outputs.end(), out) != graph.outputs.end())
        continue;
      set_value_info(graph.value(out), g->add_value_info());
    }
  }
  std::string bytes;
  DLAS_CHECK(model.SerializeToString(&bytes), ErrorKind::kRuntime, "export of graph '", graph.name,
             "': protobuf serialisation failed (model larger than 2 GiB?)");
  return bytes;
}

}  // namespace

std::string export_onnx_bytes(const Graph& graph) { return serialise(graph, nullptr); }

void export_onnx_file(const Graph& graph, const std::string& path, bool external_data) {
  if (!external_data && graph.weight_bytes() < kExternalDataThreshold) {
    write_file_atomic(path, serialise(graph, nullptr));
    return;
  }
  ExternalData data;
  const std::filesystem::path data_path = std::filesystem::path(path).string() + ".data";
  data.location = data_path.filename().string();
  const std::string model = serialise(graph, &data);
  write_file_atomic(data_path, data.bytes);
  try {
    write_file_atomic(path, model);
  } catch (...) {
    std::error_code ec;
    std::filesystem::remove(data_path, ec);
    throw;
  }
}

}  // namespace dlas

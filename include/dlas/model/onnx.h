// ONNX import and export (DLAS layer 2). The IR follows ONNX opset-13 forms;
// import normalises opsets 1-18 into them; export writes opset 13, or the
// lowest newer opset the graph's ops need (17 for LayerNormalization, 18 for
// Resize/Pad with axes), converting reduction axes to that opset's form.
#pragma once

#include <map>
#include <string>
#include <string_view>

#include "dlas/model/graph.h"

namespace dlas {

struct OnnxImportOptions {
  // Overrides the shape of named graph inputs; the empty name "" means the first
  // runtime input. Dynamic dims must be overridden, except a leading (batch) one,
  // which defaults to 1.
  std::map<std::string, Shape> input_shapes;
  // The folder whose files external tensor data may be read from (import_onnx_file sets
  // it to the model's folder); empty: external data is refused.
  std::string external_data_dir;
};

// Parses a model. The graph is not yet folded or inferred (see load_model in
// dlas/system/loader.h, which does both). Throws kInvalidInput for corrupt or
// truncated files and kUnsupported for unsupported ops/dtypes, naming the node.
Graph import_onnx_file(const std::string& path, const OnnxImportOptions& options = {});
Graph import_onnx_bytes(std::string_view bytes, const std::string& source_name,
                        const OnnxImportOptions& options = {});

// Serialises an inferred graph as an ONNX model (opset 13 or newer, see above). The file is written
// to a temporary name and renamed, so a failure never leaves a partial file.
std::string export_onnx_bytes(const Graph& graph);
// With `external_data`, or when the weights pass kExternalDataThreshold (1.5 GiB: protobuf
// refuses messages of 2 GiB, and the graph needs room too), the initializers go to "<path>.data" beside the
// model (ONNX external data: location, offset, length), written before the model; a
// failure leaves neither file.
constexpr int64_t kExternalDataThreshold = int64_t{3} << 29;
void export_onnx_file(const Graph& graph, const std::string& path, bool external_data = false);

}  // namespace dlas

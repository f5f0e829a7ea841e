// Internal: conversions between onnx::TensorProto and dlas::Tensor, shared by the
// importer, the exporter, the conformance test and the fuzzers. Keeps protobuf
// types out of the public headers.
#pragma once

#include <string>
#include <string_view>

#include <onnx/onnx_pb.h>

#include "dlas/core/tensor.h"

namespace dlas::onnx_io {

// "FLOAT", "DOUBLE", ... for an ONNX TensorProto.DataType code ("code 42" when unknown).
std::string onnx_dtype_name(int code);

// Converts a TensorProto. `what` names the tensor in errors ("initializer 'w'",
// "node 'c' (Constant): attribute 'value'"). External data is read from files inside
// `model_dir` (the folder of the .onnx file; empty: the model came without one, and
// external data is kUnsupported): a location that is absolute, climbs out with "..", or
// resolves outside that folder through a symlink is kInvalidInput naming the tensor.
// Throws kUnsupported for dtypes dlas lacks and segmented data; kInvalidInput for negative
// dims or a data size that does not match the dims. Never allocates more than the data
// present.
Tensor tensor_from_proto(const onnx::TensorProto& proto, const std::string& what,
                         const std::string& model_dir = {});

// Parses a serialised TensorProto (the backend test data files input_0.pb, ...).
Tensor tensor_from_proto_bytes(std::string_view bytes, const std::string& source_name);

// Writes `tensor` into `proto` as raw_data (little-endian), named `name`.
void tensor_to_proto(const Tensor& tensor, const std::string& name, onnx::TensorProto* proto);
// The same, with the bytes left to an external data file: `proto` points at `location`
// (relative to the model's folder) from `offset`.
void tensor_to_external_proto(const Tensor& tensor, const std::string& name,
                              const std::string& location, int64_t offset,
                              onnx::TensorProto* proto);

}  // namespace dlas::onnx_io

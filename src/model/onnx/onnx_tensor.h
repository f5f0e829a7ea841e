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
// "node 'c' (Constant): attribute 'value'"). Throws kUnsupported for dtypes dlas
// lacks, external or segmented data; kInvalidInput for negative dims or a data
// size that does not match the dims. Never allocates more than the data present.
Tensor tensor_from_proto(const onnx::TensorProto& proto, const std::string& what);

// Parses a serialised TensorProto (the backend test data files input_0.pb, ...).
Tensor tensor_from_proto_bytes(std::string_view bytes, const std::string& source_name);

// Writes `tensor` into `proto` as raw_data (little-endian), named `name`.
void tensor_to_proto(const Tensor& tensor, const std::string& name, onnx::TensorProto* proto);

}  // namespace dlas::onnx_io

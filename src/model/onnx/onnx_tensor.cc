#include "model/onnx/onnx_tensor.h"

#include <climits>
#include <cstring>
#include <limits>

namespace dlas::onnx_io {

std::string onnx_dtype_name(int code) {
  if (onnx::TensorProto_DataType_IsValid(code))
    return onnx::TensorProto_DataType_Name(static_cast<onnx::TensorProto_DataType>(code));
  return str("code ", code);
}

namespace {

// Copies `count` typed values into the tensor, converting each with `convert`.
template <class Field, class Convert>
void copy_typed(const Field& field, Tensor& t, Convert convert) {
  for (int i = 0; i < field.size(); ++i) convert(i, field.Get(i));
}

}  // namespace

Tensor tensor_from_proto(const onnx::TensorProto& proto, const std::string& what) {
  DLAS_CHECK(proto.data_type() != onnx::TensorProto::UNDEFINED, ErrorKind::kInvalidInput, what,
             " has no data type");
  const std::optional<DType> dtype = dtype_from_onnx(proto.data_type());
  if (!dtype) {
    fail(ErrorKind::kUnsupported, what, " has dtype ", onnx_dtype_name(proto.data_type()),
         ", which dlas does not support");
  }
  if (proto.data_location() == onnx::TensorProto::EXTERNAL || proto.external_data_size() > 0)
    fail(ErrorKind::kUnsupported, what, " uses external data, which dlas does not support");
  if (proto.has_segment())
    fail(ErrorKind::kUnsupported, what, " is segmented, which dlas does not support");

  Shape shape(proto.dims().begin(), proto.dims().end());
  int64_t numel = 1;
  for (int64_t d : shape) {
    DLAS_CHECK(d >= 0, ErrorKind::kInvalidInput, what, " has a negative dimension in ",
               shape_str(shape));
    DLAS_CHECK(d == 0 || numel <= std::numeric_limits<int64_t>::max() / d, ErrorKind::kInvalidInput,
               what, " has too many elements in ", shape_str(shape));
    numel *= d;
  }
  const int64_t elem = static_cast<int64_t>(dtype_size(*dtype));

  // Check that the data present matches the dims before allocating anything, so
  // a malicious file cannot ask for a huge tensor it does not carry.
  int64_t present = 0;
  const bool raw = proto.has_raw_data();
  if (raw) {
    const int64_t bytes = static_cast<int64_t>(proto.raw_data().size());
    DLAS_CHECK(numel <= std::numeric_limits<int64_t>::max() / elem && bytes == numel * elem,
               ErrorKind::kInvalidInput, what, " (", dtype_name(*dtype), shape_str(shape), ") has ",
               bytes, " bytes of raw_data, expected ", numel * elem);
  } else {
    switch (*dtype) {
      case DType::kF32:
        present = proto.float_data_size();
        break;
      case DType::kS64:
        present = proto.int64_data_size();
        break;
      default:
        present = proto.int32_data_size();
        break;
    }
    DLAS_CHECK(present == numel, ErrorKind::kInvalidInput, what, " (", dtype_name(*dtype),
               shape_str(shape), ") has ", present, " values, expected ", numel);
  }

  Tensor t(*dtype, shape);
  if (numel == 0) return t;
  if (raw) {
    std::memcpy(t.raw(), proto.raw_data().data(), t.nbytes());
    return t;
  }
  switch (*dtype) {
    case DType::kF32: {
      float* p = t.data<float>();
      copy_typed(proto.float_data(), t, [&](int i, float v) { p[i] = v; });
      break;
    }
    case DType::kS64: {
      int64_t* p = t.data<int64_t>();
      copy_typed(proto.int64_data(), t, [&](int i, int64_t v) { p[i] = v; });
      break;
    }
    case DType::kS32: {
      int32_t* p = t.data<int32_t>();
      copy_typed(proto.int32_data(), t, [&](int i, int32_t v) { p[i] = v; });
      break;
    }
    case DType::kS8: {
      int8_t* p = t.data<int8_t>();
      copy_typed(proto.int32_data(), t, [&](int i, int32_t v) { p[i] = static_cast<int8_t>(v); });
      break;
    }
    case DType::kU8: {
      uint8_t* p = t.data<uint8_t>();
      copy_typed(proto.int32_data(), t, [&](int i, int32_t v) { p[i] = static_cast<uint8_t>(v); });
      break;
    }
    case DType::kF16:
    case DType::kBF16: {
      // 16-bit floats travel as their bit patterns in the low half of int32_data.
      uint16_t* p = t.bits16();
      copy_typed(proto.int32_data(), t,
                 [&](int i, int32_t v) { p[i] = static_cast<uint16_t>(v & 0xffff); });
      break;
    }
  }
  return t;
}

Tensor tensor_from_proto_bytes(std::string_view bytes, const std::string& source_name) {
  onnx::TensorProto proto;
  if (bytes.size() > static_cast<size_t>(INT_MAX) ||
      !proto.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) {
    fail(ErrorKind::kInvalidInput, source_name,
         ": not a valid ONNX tensor (protobuf parse failed)");
  }
  const std::string what =
      proto.name().empty() ? source_name : str(source_name, ": tensor '", proto.name(), "'");
  return tensor_from_proto(proto, what);
}

void tensor_to_proto(const Tensor& tensor, const std::string& name, onnx::TensorProto* proto) {
  DLAS_CHECK(tensor.defined(), ErrorKind::kInternal, "tensor_to_proto: tensor '", name,
             "' is undefined");
  proto->Clear();
  proto->set_name(name);
  proto->set_data_type(dtype_to_onnx(tensor.dtype()));
  for (int64_t d : tensor.shape()) proto->add_dims(d);
  proto->set_raw_data(static_cast<const char*>(tensor.raw()), tensor.nbytes());
}

}  // namespace dlas::onnx_io

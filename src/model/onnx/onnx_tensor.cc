#include "model/onnx/onnx_tensor.h"

#include <climits>
#include <cstring>
#include <filesystem>
#include <fstream>
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

namespace fs = std::filesystem;

// Whether `inner` (canonical) lies inside the folder `outer` (canonical).
bool inside(const fs::path& inner, const fs::path& outer) {
  auto i = inner.begin();
  for (auto o = outer.begin(); o != outer.end(); ++o, ++i)
    if (i == inner.end() || *i != *o) return false;
  return i != inner.end();
}

// The `bytes` bytes of an external-data tensor, read from its file inside model_dir.
std::string read_external_data(const onnx::TensorProto& proto, const std::string& what,
                               const std::string& model_dir, int64_t bytes) {
  DLAS_CHECK(!model_dir.empty(), ErrorKind::kUnsupported, what,
             " uses external data: load the model from its .onnx file so that its data file "
             "can be found beside it");
  std::string location;
  int64_t offset = 0, length = -1;
  for (const auto& kv : proto.external_data()) {
    try {
      if (kv.key() == "location") location = kv.value();
      if (kv.key() == "offset") offset = std::stoll(kv.value());
      if (kv.key() == "length") length = std::stoll(kv.value());
    } catch (const std::exception&) {
      fail(ErrorKind::kInvalidInput, what, ": external data ", kv.key(), " '", kv.value(),
           "' is not a number");
    }
  }
  DLAS_CHECK(!location.empty(), ErrorKind::kInvalidInput, what,
             " uses external data but names no location");
  const fs::path rel(location);
  bool climbs = rel.is_absolute() || rel.has_root_name() || rel.has_root_directory();
  for (const fs::path& part : rel) climbs |= part == "..";
  DLAS_CHECK(!climbs, ErrorKind::kInvalidInput, what, ": external data location '", location,
             "' leaves the model's folder (absolute or '..' paths are refused)");
  std::error_code ec;
  const fs::path dir = fs::canonical(fs::path(model_dir), ec);
  DLAS_CHECK(!ec, ErrorKind::kInvalidInput, what, ": model folder '", model_dir,
             "' cannot be read: ", ec.message());
  const fs::path file = fs::canonical(dir / rel, ec);
  DLAS_CHECK(!ec, ErrorKind::kInvalidInput, what, ": external data file '", location,
             "' not found beside the model");
  DLAS_CHECK(inside(file, dir), ErrorKind::kInvalidInput, what, ": external data file '", location,
             "' resolves outside the model's folder (a symlink?)");
  DLAS_CHECK(fs::is_regular_file(file, ec), ErrorKind::kInvalidInput, what, ": external data '",
             location, "' is not a regular file");
  DLAS_CHECK(offset >= 0 && (length < 0 || length == bytes), ErrorKind::kInvalidInput, what,
             ": external data has offset ", offset, " and length ", length, ", expected length ",
             bytes);
  const auto size = static_cast<int64_t>(fs::file_size(file, ec));
  DLAS_CHECK(!ec && offset <= size && bytes <= size - offset, ErrorKind::kInvalidInput, what,
             ": external data file '", location, "' holds ", size, " bytes, the tensor needs ",
             bytes, " from offset ", offset);
  std::string data(static_cast<size_t>(bytes), '\0');
  std::ifstream in(file, std::ios::binary);
  in.seekg(offset);
  in.read(data.data(), bytes);
  DLAS_CHECK(in.good() || (in.eof() && in.gcount() == bytes), ErrorKind::kInvalidInput, what,
             ": reading external data file '", location, "' failed");
  return data;
}

}  // namespace

Tensor tensor_from_proto(const onnx::TensorProto& proto, const std::string& what,
                         const std::string& model_dir) {
  DLAS_CHECK(proto.data_type() != onnx::TensorProto::UNDEFINED, ErrorKind::kInvalidInput, what,
             " has no data type");
  const std::optional<DType> dtype = dtype_from_onnx(proto.data_type());
  if (!dtype) {
    fail(ErrorKind::kUnsupported, what, " has dtype ", onnx_dtype_name(proto.data_type()),
         ", which dlas does not support");
  }
  const bool external =
      proto.data_location() == onnx::TensorProto::EXTERNAL || proto.external_data_size() > 0;
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
  if (external) {
    DLAS_CHECK(numel <= std::numeric_limits<int64_t>::max() / elem, ErrorKind::kInvalidInput, what,
               " has too many elements in ", shape_str(shape));
    const std::string data = read_external_data(proto, what, model_dir, numel * elem);
    Tensor t(*dtype, shape);
    if (numel > 0) std::memcpy(t.raw(), data.data(), t.nbytes());
    return t;
  }
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
    if (*dtype == DType::kBool)  // one byte per value; anything nonzero is true
      for (uint8_t *p = static_cast<uint8_t*>(t.raw()), *e = p + numel; p != e; ++p)
        *p = *p != 0 ? 1 : 0;
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
    case DType::kBool: {
      uint8_t* p = static_cast<uint8_t*>(t.raw());
      copy_typed(proto.int32_data(), t, [&](int i, int32_t v) { p[i] = v != 0 ? 1 : 0; });
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

void tensor_to_external_proto(const Tensor& tensor, const std::string& name,
                              const std::string& location, int64_t offset,
                              onnx::TensorProto* proto) {
  tensor_to_proto(tensor, name, proto);
  proto->clear_raw_data();
  proto->set_data_location(onnx::TensorProto::EXTERNAL);
  auto add = [&](const char* key, const std::string& value) {
    auto* kv = proto->add_external_data();
    kv->set_key(key);
    kv->set_value(value);
  };
  add("location", location);
  add("offset", std::to_string(offset));
  add("length", std::to_string(tensor.nbytes()));
}

}  // namespace dlas::onnx_io

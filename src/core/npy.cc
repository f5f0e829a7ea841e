#include "dlas/core/npy.h"

#include <cstdio>
#include <cstring>
#include <sstream>

namespace dlas {

namespace {

struct NpyType {
  const char* descr;
  DType dtype;
};
// NumPy descr for each dlas dtype (bf16 is written as f32).
const char* npy_descr(DType t) {
  switch (t) {
    case DType::kF32:
      return "<f4";
    case DType::kF16:
      return "<f2";
    case DType::kS8:
      return "|i1";
    case DType::kU8:
      return "|u1";
    case DType::kS32:
      return "<i4";
    case DType::kS64:
      return "<i8";
    case DType::kBF16:
      return "<f4";
    case DType::kBool:
      return "|b1";
  }
  return "";
}

// Extracts the value text after 'key': in the header dict.
std::string dict_value(const std::string& header, const std::string& key,
                       const std::string& source) {
  for (const char* q : {"'", "\""}) {
    std::string k = std::string(q) + key + q;
    size_t p = header.find(k);
    if (p == std::string::npos) continue;
    p = header.find(':', p + k.size());
    if (p == std::string::npos) break;
    ++p;
    while (p < header.size() && header[p] == ' ') ++p;
    size_t end;
    if (p < header.size() && header[p] == '(') {
      end = header.find(')', p);
      if (end == std::string::npos) break;
      return header.substr(p, end - p + 1);
    }
    if (p < header.size() && (header[p] == '\'' || header[p] == '"')) {
      end = header.find(header[p], p + 1);
      if (end == std::string::npos) break;
      return header.substr(p + 1, end - p - 1);
    }
    end = header.find_first_of(",}", p);
    if (end == std::string::npos) break;
    std::string v = header.substr(p, end - p);
    while (!v.empty() && v.back() == ' ') v.pop_back();
    return v;
  }
  fail(ErrorKind::kInvalidInput, source, ": .npy header lacks '", key, "'");
}

}  // namespace

Tensor parse_npy(std::string_view bytes, const std::string& source) {
  static const char kMagic[] = "\x93NUMPY";
  DLAS_CHECK(bytes.size() >= 10 && std::memcmp(bytes.data(), kMagic, 6) == 0,
             ErrorKind::kInvalidInput, source, ": not a .npy file (bad magic)");
  const uint8_t major = static_cast<uint8_t>(bytes[6]);
  size_t header_len, offset;
  if (major == 1) {
    header_len =
        static_cast<uint8_t>(bytes[8]) | (static_cast<size_t>(static_cast<uint8_t>(bytes[9])) << 8);
    offset = 10;
  } else if (major == 2 || major == 3) {
    DLAS_CHECK(bytes.size() >= 12, ErrorKind::kInvalidInput, source, ": truncated .npy header");
    header_len = 0;
    for (int i = 0; i < 4; ++i)
      header_len |= static_cast<size_t>(static_cast<uint8_t>(bytes[8 + i])) << (8 * i);
    offset = 12;
  } else {
    fail(ErrorKind::kUnsupported, source, ": .npy format version ", int(major),
         " is not supported");
  }
  DLAS_CHECK(header_len <= bytes.size() - offset, ErrorKind::kInvalidInput, source,
             ": truncated .npy header");
  const std::string header(bytes.substr(offset, header_len));
  offset += header_len;

  const std::string descr = dict_value(header, "descr", source);
  const std::string fortran = dict_value(header, "fortran_order", source);
  const std::string shape_text = dict_value(header, "shape", source);
  DLAS_CHECK(fortran == "False", ErrorKind::kUnsupported, source,
             ": Fortran-ordered arrays are not supported (save with np.ascontiguousarray)");
  DLAS_CHECK(shape_text.size() >= 2 && shape_text.front() == '(' && shape_text.back() == ')',
             ErrorKind::kInvalidInput, source, ": malformed shape in .npy header");
  Shape shape;
  {
    std::string inner = shape_text.substr(1, shape_text.size() - 2);
    std::stringstream ss(inner);
    std::string item;
    while (std::getline(ss, item, ',')) {
      size_t b = item.find_first_not_of(' ');
      if (b == std::string::npos) continue;
      item = item.substr(b);
      while (!item.empty() && (item.back() == ' ' || item.back() == 'L')) item.pop_back();
      DLAS_CHECK(!item.empty() && item.find_first_not_of("0123456789") == std::string::npos &&
                     item.size() <= 15,
                 ErrorKind::kInvalidInput, source, ": malformed shape ", shape_text,
                 " in .npy header");
      shape.push_back(std::stoll(item));
    }
  }
  // descr: byte order + kind + size; '=' and '|' mean native/not applicable.
  DLAS_CHECK(descr.size() >= 3, ErrorKind::kInvalidInput, source, ": malformed dtype '", descr,
             "'");
  const char order = descr[0];
  const std::string kind = descr.substr(1);
  DLAS_CHECK(order != '>' || kind == "i1" || kind == "u1" || kind == "b1", ErrorKind::kUnsupported,
             source, ": big-endian arrays are not supported");
  enum class Src { kF32, kF16, kF64, kS8, kU8, kS32, kS64, kBool } src;
  if (kind == "f4")
    src = Src::kF32;
  else if (kind == "f2")
    src = Src::kF16;
  else if (kind == "f8")
    src = Src::kF64;
  else if (kind == "i1")
    src = Src::kS8;
  else if (kind == "u1")
    src = Src::kU8;
  else if (kind == "i4")
    src = Src::kS32;
  else if (kind == "i8")
    src = Src::kS64;
  else if (kind == "b1")
    src = Src::kBool;
  else
    fail(ErrorKind::kUnsupported, source, ": .npy dtype '", descr, "' is not supported");

  const int64_t n = shape_numel(shape);
  const size_t esize = (src == Src::kF64 || src == Src::kS64)   ? 8
                       : (src == Src::kF32 || src == Src::kS32) ? 4
                       : src == Src::kF16                       ? 2
                                                                : 1;
  DLAS_CHECK(n >= 0 && static_cast<uint64_t>(n) <= (bytes.size() - offset) / esize,
             ErrorKind::kInvalidInput, source, ": truncated .npy data (", bytes.size() - offset,
             " bytes for shape ", shape_str(shape), ")");
  const char* data = bytes.data() + offset;
  if (src == Src::kF64) {
    Tensor t(DType::kF32, shape);
    float* o = t.data<float>();
    for (int64_t i = 0; i < n; ++i) {
      double v;
      std::memcpy(&v, data + i * 8, 8);
      o[i] = static_cast<float>(v);
    }
    return t;
  }
  DType dt = src == Src::kF32    ? DType::kF32
             : src == Src::kF16  ? DType::kF16
             : src == Src::kS8   ? DType::kS8
             : src == Src::kS32  ? DType::kS32
             : src == Src::kS64  ? DType::kS64
             : src == Src::kBool ? DType::kBool
                                 : DType::kU8;
  Tensor t(dt, shape);
  std::memcpy(t.raw(), data, static_cast<size_t>(n) * esize);
  return t;
}

Tensor read_npy(const std::string& path) { return parse_npy(read_file(path), path); }

std::string serialize_npy(const Tensor& tensor) {
  DLAS_CHECK(tensor.defined(), ErrorKind::kInternal, "serialize_npy: undefined tensor");
  const Tensor t = tensor.dtype() == DType::kBF16 ? tensor.cast(DType::kF32) : tensor;
  // NumPy's own spelling: "()", "(5,)", "(2, 3)".
  std::string shape = "(";
  for (size_t i = 0; i < t.shape().size(); ++i)
    shape += (i ? ", " : "") + std::to_string(t.shape()[i]);
  shape += t.shape().size() == 1 ? ",)" : ")";
  std::string header = str("{'descr': '", npy_descr(t.dtype()),
                           "', 'fortran_order': False, 'shape': ", shape, ", }");
  // Pad with spaces so data starts at a multiple of 64 bytes; header ends with '\n'.
  const size_t total = 10 + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header += '\n';
  std::string out = "\x93NUMPY";
  out += '\x01';
  out += '\x00';
  out += static_cast<char>(header.size() & 0xff);
  out += static_cast<char>((header.size() >> 8) & 0xff);
  out += header;
  out.append(static_cast<const char*>(t.raw()), t.nbytes());
  return out;
}

void write_npy(const std::string& path, const Tensor& tensor) {
  write_file_atomic(path, serialize_npy(tensor));
}

}  // namespace dlas

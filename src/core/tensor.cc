#include "dlas/core/tensor.h"

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <new>

namespace dlas {

int64_t shape_numel(const Shape& shape) {
  int64_t n = 1;
  for (int64_t d : shape) {
    DLAS_CHECK(d >= 0, ErrorKind::kInvalidInput, "negative dimension in shape ", shape_str(shape));
    DLAS_CHECK(d == 0 || n <= std::numeric_limits<int64_t>::max() / d, ErrorKind::kInvalidInput,
               "shape ", shape_str(shape), " has too many elements");
    n *= d;
  }
  return n;
}

std::string shape_str(const Shape& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) s += ", ";
    s += std::to_string(shape[i]);
  }
  return s + "]";
}

Tensor::Tensor(DType dtype, Shape shape) : dtype_(dtype), shape_(std::move(shape)) {
  numel_ = shape_numel(shape_);
  constexpr int64_t kMaxBytes = int64_t{1} << 40;
  DLAS_CHECK(numel_ <= kMaxBytes / static_cast<int64_t>(dtype_size(dtype_)),
             ErrorKind::kInvalidInput, "tensor ", describe(), " is too large");
  size_t bytes = nbytes();
  size_t alloc = (bytes + kTensorAlignment - 1) / kTensorAlignment * kTensorAlignment;
  if (alloc == 0) alloc = kTensorAlignment;
  void* p = std::aligned_alloc(kTensorAlignment, alloc);
  if (!p) fail(ErrorKind::kRuntime, "out of memory allocating ", alloc, " bytes for ", describe());
  std::memset(p, 0, alloc);
  storage_ =
      std::shared_ptr<std::byte>(static_cast<std::byte*>(p), [](std::byte* q) { std::free(q); });
}

Tensor Tensor::view(DType dtype, Shape shape, void* data) {
  DLAS_CHECK(data != nullptr, ErrorKind::kInternal, "Tensor::view of null memory");
  Tensor t;
  t.dtype_ = dtype;
  t.shape_ = std::move(shape);
  t.numel_ = shape_numel(t.shape_);
  t.storage_ = std::shared_ptr<std::byte>(static_cast<std::byte*>(data), [](std::byte*) {});
  return t;
}

void Tensor::check_type(DType t) const {
  DLAS_CHECK(defined(), ErrorKind::kInternal, "access to an undefined tensor");
  DLAS_CHECK(t == dtype_, ErrorKind::kInternal, "tensor is ", dtype_name(dtype_), ", accessed as ",
             dtype_name(t));
}

uint16_t* Tensor::bits16() {
  DLAS_CHECK(dtype_ == DType::kF16 || dtype_ == DType::kBF16, ErrorKind::kInternal, "bits16() on ",
             dtype_name(dtype_), " tensor");
  return static_cast<uint16_t*>(raw());
}
const uint16_t* Tensor::bits16() const { return const_cast<Tensor*>(this)->bits16(); }

Tensor Tensor::clone() const {
  if (!defined()) return {};
  Tensor t(dtype_, shape_);
  std::memcpy(t.raw(), raw(), nbytes());
  return t;
}

Tensor Tensor::reshaped(Shape shape) const {
  DLAS_CHECK(shape_numel(shape) == numel_, ErrorKind::kInternal, "cannot reshape ", describe(),
             " to ", shape_str(shape));
  Tensor t = *this;
  t.shape_ = std::move(shape);
  return t;
}

double Tensor::get_as_double(int64_t i) const {
  const void* p = raw();
  switch (dtype_) {
    case DType::kF32:
      return static_cast<const float*>(p)[i];
    case DType::kF16:
      return f16_to_f32(static_cast<const uint16_t*>(p)[i]);
    case DType::kBF16:
      return bf16_to_f32(static_cast<const uint16_t*>(p)[i]);
    case DType::kS8:
      return static_cast<const int8_t*>(p)[i];
    case DType::kU8:
      return static_cast<const uint8_t*>(p)[i];
    case DType::kS32:
      return static_cast<const int32_t*>(p)[i];
    case DType::kS64:
      return static_cast<double>(static_cast<const int64_t*>(p)[i]);
    case DType::kBool:
      return static_cast<const uint8_t*>(p)[i] != 0 ? 1.0 : 0.0;
  }
  return 0;
}

int64_t Tensor::get_as_int64(int64_t i) const {
  if (dtype_ == DType::kS64) return static_cast<const int64_t*>(raw())[i];
  return static_cast<int64_t>(get_as_double(i));
}

Tensor Tensor::cast(DType to) const {
  Tensor t(to, shape_);
  if (to == dtype_) {
    std::memcpy(t.raw(), raw(), nbytes());
    return t;
  }
  void* q = t.raw();
  for (int64_t i = 0; i < numel_; ++i) {
    if (is_float(to)) {
      const float f = static_cast<float>(get_as_double(i));
      if (to == DType::kF32)
        static_cast<float*>(q)[i] = f;
      else if (to == DType::kF16)
        static_cast<uint16_t*>(q)[i] = f32_to_f16(f);
      else
        static_cast<uint16_t*>(q)[i] = f32_to_bf16(f);
      continue;
    }
    if (to == DType::kBool) {  // nonzero (NaN included) -> 1
      static_cast<uint8_t*>(q)[i] = get_as_double(i) != 0.0 ? 1 : 0;
      continue;
    }
    // To an integer: floats truncate toward zero (NaN -> 0, clamped to int64), then
    // every integer narrows by two's-complement wrapping.
    int64_t v;
    if (is_float(dtype_)) {
      const double d = get_as_double(i);
      v = std::isnan(d)                 ? 0
          : d >= 9.2233720368547758e18  ? std::numeric_limits<int64_t>::max()
          : d <= -9.2233720368547758e18 ? std::numeric_limits<int64_t>::min()
                                        : static_cast<int64_t>(d);
    } else {
      v = get_as_int64(i);
    }
    if (to == DType::kS8)
      static_cast<int8_t*>(q)[i] = static_cast<int8_t>(v);
    else if (to == DType::kU8)
      static_cast<uint8_t*>(q)[i] = static_cast<uint8_t>(v);
    else if (to == DType::kS32)
      static_cast<int32_t*>(q)[i] = static_cast<int32_t>(v);
    else
      static_cast<int64_t*>(q)[i] = v;
  }
  return t;
}

std::vector<int64_t> Tensor::to_int64_vector() const {
  std::vector<int64_t> v(static_cast<size_t>(numel_));
  for (int64_t i = 0; i < numel_; ++i) v[static_cast<size_t>(i)] = get_as_int64(i);
  return v;
}

std::vector<float> Tensor::to_float_vector() const {
  std::vector<float> v(static_cast<size_t>(numel_));
  for (int64_t i = 0; i < numel_; ++i)
    v[static_cast<size_t>(i)] = static_cast<float>(get_as_double(i));
  return v;
}

std::string Tensor::describe() const {
  if (!defined() && shape_.empty()) return "undefined";
  return std::string(dtype_name(dtype_)) + shape_str(shape_);
}

}  // namespace dlas

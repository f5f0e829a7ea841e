// Tensor: dtype + shape + 64-byte aligned storage shared by copies.
// Copies are shallow (they share storage, like torch::Tensor); clone() is deep.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "dlas/core/dtype.h"
#include "dlas/core/error.h"

namespace dlas {

using Shape = std::vector<int64_t>;

inline constexpr size_t kTensorAlignment = 64;

// Product of the dimensions (1 for a scalar shape {}); throws on negative dims or overflow.
int64_t shape_numel(const Shape& shape);
// "[1, 3, 224, 224]"
std::string shape_str(const Shape& shape);

class Tensor {
 public:
  Tensor() = default;  // undefined tensor (defined() == false), used for absent optional inputs
  // Allocates zero-initialised, 64-byte aligned storage.
  Tensor(DType dtype, Shape shape);

  template <class T>
  static Tensor from_vector(Shape shape, const std::vector<T>& values) {
    Tensor t(DTypeOf<T>::value, std::move(shape));
    DLAS_CHECK(static_cast<size_t>(t.numel()) == values.size(), ErrorKind::kInternal,
               "Tensor::from_vector: ", values.size(), " values for shape ", shape_str(t.shape()));
    std::copy(values.begin(), values.end(), t.data<T>());
    return t;
  }
  static Tensor scalar_f32(float v) { return from_vector<float>({}, {v}); }
  // A tensor over memory it does not own (an arena slot). The caller keeps `data`
  // alive and aligned to the dtype while the tensor or any copy of it is used.
  static Tensor view(DType dtype, Shape shape, void* data);

  bool defined() const { return storage_ != nullptr; }
  DType dtype() const { return dtype_; }
  const Shape& shape() const { return shape_; }
  int64_t dim(int i) const { return shape_.at(static_cast<size_t>(i < 0 ? i + rank() : i)); }
  int rank() const { return static_cast<int>(shape_.size()); }
  int64_t numel() const { return numel_; }
  size_t nbytes() const { return static_cast<size_t>(numel_) * dtype_size(dtype_); }

  void* raw() { return storage_.get(); }
  const void* raw() const { return storage_.get(); }
  // Typed access; throws kInternal when T does not match dtype().
  template <class T>
  T* data() {
    check_type(DTypeOf<T>::value);
    return static_cast<T*>(raw());
  }
  template <class T>
  const T* data() const {
    check_type(DTypeOf<T>::value);
    return static_cast<const T*>(raw());
  }
  // 16-bit payloads (f16, bf16) as raw bits.
  uint16_t* bits16();
  const uint16_t* bits16() const;

  // Deep copy.
  Tensor clone() const;
  // Same storage, new shape with the same element count.
  Tensor reshaped(Shape shape) const;
  // Element i converted to double / int64 (slow; for tests, printing, folding).
  double get_as_double(int64_t i) const;
  int64_t get_as_int64(int64_t i) const;
  // Converts every element to dtype `to`: float->int truncates toward zero (NaN -> 0),
  // integers narrow by wrapping, floats round to nearest even.
  Tensor cast(DType to) const;
  // Values of an integer tensor as int64 (for shape-like constants).
  std::vector<int64_t> to_int64_vector() const;
  std::vector<float> to_float_vector() const;

  // "f32[1, 3, 32, 32]"
  std::string describe() const;

 private:
  void check_type(DType t) const;
  DType dtype_ = DType::kF32;
  Shape shape_;
  int64_t numel_ = 0;
  std::shared_ptr<std::byte> storage_;
};

}  // namespace dlas

// std::vector on 64-byte aligned storage, for packed weights and other arrays the kernels
// read a whole vector register at a time: from std::vector's 16-byte alignment every
// 64-byte AVX-512 load of a packed weight panel straddles two cache lines, and the
// alignment of large blocks varies from process to process with the allocator's state.
#pragma once

#include <cstddef>
#include <new>
#include <vector>

#include "dlas/core/tensor.h"

namespace dlas {

template <class T>
struct AlignedAllocator {
  using value_type = T;
  AlignedAllocator() = default;
  template <class U>
  AlignedAllocator(const AlignedAllocator<U>&) noexcept {}
  T* allocate(size_t n) {
    return static_cast<T*>(::operator new(n * sizeof(T), std::align_val_t(kTensorAlignment)));
  }
  void deallocate(T* p, size_t) noexcept {
    ::operator delete(p, std::align_val_t(kTensorAlignment));
  }
  template <class U>
  bool operator==(const AlignedAllocator<U>&) const noexcept {
    return true;
  }
};

template <class T>
using AlignedVector = std::vector<T, AlignedAllocator<T>>;

}  // namespace dlas

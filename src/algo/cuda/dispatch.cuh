// Host-side dispatch from runtime values (a storage type, a knob's value) to kernel template
// arguments, for the CUDA conv algorithms' launch pickers and the ops. Included through
// epilogue.cuh.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <type_traits>

#include "dlas/algo/cuda_conv.h"

namespace dlas::cuda {

// Returns f(T{}) with T the device type of `storage` (float, __half, __nv_bfloat16); f returns
// the same type for every T.
template <class F>
decltype(auto) with_storage_type(Storage storage, F&& f) {
  switch (storage) {
    case Storage::kF16:
      return f(__half{});
    case Storage::kBF16:
      return f(__nv_bfloat16{});
    default:
      return f(float{});
  }
}

// Returns f(std::integral_constant<int, V>{}) for the first V of `Values` equal to v, the
// last V when none is (a knob's instantiated values, its largest last); f returns the same
// type for every V.
template <int First, int... Rest, class F>
decltype(auto) with_int(int64_t v, F&& f) {
  if constexpr (sizeof...(Rest) == 0) {
    return f(std::integral_constant<int, First>{});
  } else {
    if (v == First) return f(std::integral_constant<int, First>{});
    return with_int<Rest...>(v, static_cast<F&&>(f));
  }
}

}  // namespace dlas::cuda

// The fused epilogue every CUDA producer applies per output element (cuda_conv.h's
// Epilogue): y = act(acc + bias[k] + residual[i]), and the loads and stores of each storage
// type (f32, f16, bf16: every kernel computes in f32). Device code, included by the .cu files.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "algo/cuda/dispatch.cuh"
#include "dlas/algo/cuda_conv.h"

namespace dlas::cuda {

// The Epilogue's fields as kernel parameters (passed by value).
struct EpilogueArgs {
  const float* bias;
  const void* residual;  // the output's storage type
  int act;
  float p0, p1;
};

inline EpilogueArgs epilogue_args(const Epilogue& e) {
  return {e.bias, e.residual, static_cast<int>(e.act), e.p0, e.p1};
}

__device__ __forceinline__ float activate(float v, int act, float p0, float p1) {
  switch (act) {
    case static_cast<int>(Activation::kRelu):
      return fmaxf(v, 0.f);
    case static_cast<int>(Activation::kClip):
      return fminf(fmaxf(v, p0), p1);
    case static_cast<int>(Activation::kSigmoid):
      return 1.f / (1.f + __expf(-v));
    case static_cast<int>(Activation::kSilu):
      return v / (1.f + __expf(-v));
    case static_cast<int>(Activation::kHardSigmoid):
      return fminf(fmaxf(p0 * v + p1, 0.f), 1.f);
    case static_cast<int>(Activation::kHardSwish):
      return v * fminf(fmaxf(v * (1.f / 6.f) + 0.5f, 0.f), 1.f);
    case static_cast<int>(Activation::kErf):
      return erff(v);
    case static_cast<int>(Activation::kGelu):
      return (v * (erff(v / p0) + 1.f)) * 0.5f;
    default:
      return v;
  }
}

// An element of a storage type as f32; one read through the read-only cache as f32; and an
// f32 value rounded (to nearest even) to a storage type.
__device__ __forceinline__ float as_float(float v) { return v; }
__device__ __forceinline__ float as_float(__half v) { return __half2float(v); }
__device__ __forceinline__ float as_float(__nv_bfloat16 v) { return __bfloat162float(v); }
template <class T>
__device__ __forceinline__ float ld(const T* p) {
  return as_float(__ldg(p));
}
template <class T>
__device__ __forceinline__ T narrow(float v);
template <>
__device__ __forceinline__ float narrow<float>(float v) {
  return v;
}
template <>
__device__ __forceinline__ __half narrow<__half>(float v) {
  return __float2half_rn(v);
}
template <>
__device__ __forceinline__ __nv_bfloat16 narrow<__nv_bfloat16>(float v) {
  return __float2bfloat16_rn(v);
}

// acc for output element `index` (NCHW linear index) of channel `k`, the residual of type T.
template <class T = float>
__device__ __forceinline__ float finish(float acc, int64_t k, int64_t index,
                                        const EpilogueArgs& e) {
  if (e.bias) acc += __ldg(e.bias + k);
  if (e.residual) acc += ld(static_cast<const T*>(e.residual) + index);
  return activate(acc, e.act, e.p0, e.p1);
}

// The split-K epilogue: the splits' f32 partials ([split][count], each split's whole slice)
// summed in split order (the same result every run), then bias, residual and activation,
// stored as T. channel of element i: (i / inner) % channels.
template <class T>
__global__ void splitk_finish_kernel(const float* __restrict__ partial, int splits,
                                     T* __restrict__ y, int64_t count, int64_t channels,
                                     int64_t inner, EpilogueArgs e) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < count;
       i += int64_t{gridDim.x} * blockDim.x) {
    float v = 0.f;
    for (int sp = 0; sp < splits; ++sp) v += partial[sp * count + i];
    y[i] = narrow<T>(finish<T>(v, (i / inner) % channels, i, e));
  }
}

template <class T>
void launch_splitk_finish(const float* partial, int splits, T* y, int64_t count, int64_t channels,
                          int64_t inner, const EpilogueArgs& e, cudaStream_t stream) {
  int64_t blocks = (count + 255) / 256;
  blocks = blocks < 1 ? 1 : blocks > (int64_t{1} << 20) ? (int64_t{1} << 20) : blocks;
  splitk_finish_kernel<T><<<static_cast<unsigned>(blocks), 256, 0, stream>>>(
      partial, splits, y, count, channels, inner, e);
}

// Throws kRuntime naming `what` when the last launch failed (cudaGetLastError).
void check_launch(const char* what);

}  // namespace dlas::cuda

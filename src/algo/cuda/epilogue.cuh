// The fused epilogue every CUDA producer applies per output element (cuda_conv.h's
// Epilogue): y = act(acc + bias[k] + residual[i]). Device code, included by the .cu files.
#pragma once

#include "dlas/algo/cuda_conv.h"

namespace dlas::cuda {

// The Epilogue's fields as kernel parameters (passed by value).
struct EpilogueArgs {
  const float* bias;
  const float* residual;
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
    default:
      return v;
  }
}

// acc for output element `index` (NCHW linear index) of channel `k`.
__device__ __forceinline__ float finish(float acc, int64_t k, int64_t index,
                                        const EpilogueArgs& e) {
  if (e.bias) acc += __ldg(e.bias + k);
  if (e.residual) acc += __ldg(e.residual + index);
  return activate(acc, e.act, e.p0, e.p1);
}

// Throws kRuntime naming `what` when the last launch failed (cudaGetLastError).
void check_launch(const char* what);

}  // namespace dlas::cuda

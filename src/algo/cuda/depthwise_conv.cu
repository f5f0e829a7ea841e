// depthwise: the CUDA depthwise convolution (cuda_conv.h) for groups == c == k, any kernel
// size, stride, padding and dilation. Every output plane depends on one input plane and one
// kh x kw filter: block (plane, part) stages its channel's filter in shared memory and each
// thread computes `px` consecutive output pixels of one row (neighbouring pixels share most
// of their input row, which L1 serves), the filter taps unrolled for 3x3 and 5x5.
// grid = (n * c planes, pixel-group blocks of a plane), the second looped over past 65535.
// Every storage type: f16 and bf16 activations are widened on load and rounded once on
// store, the filter and the arithmetic f32.
#include <cuda_runtime.h>

#include <algorithm>
#include <memory>

#include "algo/cuda/conv_common.h"
#include "algo/cuda/epilogue.cuh"
#include "dlas/algo/cuda_conv.h"
#include "dlas/core/error.h"

namespace dlas::cuda {
namespace {

using detail::ceil_div;

constexpr int64_t kMaxTaps = 4096;  // the filter staged in shared memory (16 KiB)

struct DepthwiseParams {
  int c, h, w, oh, ow;
  int kh, kw;
  int sh, sw, ph, pw, dh, dw;
  int groups_per_row, groups;  // px-pixel groups of an output row, of a plane
};

// KS: the kernel size when square 3 or 5 (taps unrolled), 0 for any.
template <class T, int PX, int THREADS, int KS>
__global__ void __launch_bounds__(THREADS)
    depthwise_conv_kernel(const T* __restrict__ x, const float* __restrict__ w, T* __restrict__ y,
                          DepthwiseParams p, EpilogueArgs e) {
  extern __shared__ float sw[];  // [kh][kw]
  const int kh = KS ? KS : p.kh, kw = KS ? KS : p.kw;
  const int plane = blockIdx.x;  // img * c + channel
  const int ch = plane % p.c;
  for (int i = threadIdx.x; i < kh * kw; i += THREADS)
    sw[i] = __ldg(w + static_cast<int64_t>(ch) * kh * kw + i);
  __syncthreads();

  const T* xp = x + static_cast<int64_t>(plane) * p.h * p.w;
  const int64_t ybase = static_cast<int64_t>(plane) * p.oh * p.ow;
  for (int gi = blockIdx.y * THREADS + threadIdx.x; gi < p.groups; gi += gridDim.y * THREADS) {
    const int oy = gi / p.groups_per_row;
    const int ox0 = (gi - oy * p.groups_per_row) * PX;
    const int iy0 = oy * p.sh - p.ph, ix0 = ox0 * p.sw - p.pw;
    float acc[PX];
#pragma unroll
    for (int j = 0; j < PX; ++j) acc[j] = 0.f;
#pragma unroll
    for (int r = 0; r < kh; ++r) {
      const int iy = iy0 + r * p.dh;
      if (static_cast<unsigned>(iy) >= static_cast<unsigned>(p.h)) continue;
      const T* row = xp + iy * p.w;
#pragma unroll
      for (int s = 0; s < kw; ++s) {
        const float wv = sw[r * kw + s];
#pragma unroll
        for (int j = 0; j < PX; ++j) {
          const int ix = ix0 + j * p.sw + s * p.dw;
          const float v =
              static_cast<unsigned>(ix) < static_cast<unsigned>(p.w) ? ld(row + ix) : 0.f;
          acc[j] = fmaf(v, wv, acc[j]);
        }
      }
    }
#pragma unroll
    for (int j = 0; j < PX; ++j) {
      const int ox = ox0 + j;
      if (ox >= p.ow) break;
      const int64_t index = ybase + oy * p.ow + ox;
      y[index] = narrow<T>(finish<T>(acc[j], ch, index, e));
    }
  }
}

using LaunchFn = void (*)(const float*, const float*, float*, const DepthwiseParams&,
                          const EpilogueArgs&, dim3, size_t, cudaStream_t);

// x and y hold T (16-bit data passes through the float pointers as is).
template <class T, int PX, int THREADS, int KS>
void launch(const float* x, const float* w, float* y, const DepthwiseParams& p,
            const EpilogueArgs& e, dim3 grid, size_t smem, cudaStream_t stream) {
  depthwise_conv_kernel<T, PX, THREADS, KS><<<grid, THREADS, smem, stream>>>(
      reinterpret_cast<const T*>(x), w, reinterpret_cast<T*>(y), p, e);
}

// ks: 3 or 5 (the taps unrolled), else 0.
LaunchFn pick_launch(Storage storage, int64_t px, int64_t threads, int64_t ks) {
  return with_storage_type(storage, [&](auto t) {
    return with_int<1, 2, 4>(px, [&](auto PX) {
      return with_int<64, 128, 256>(threads, [&](auto TH) {
        return with_int<3, 5, 0>(
            ks, [&](auto KS) -> LaunchFn { return &launch<decltype(t), PX, TH, KS>; });
      });
    });
  });
}

class DepthwiseConvKernel final : public ConvKernel {
 public:
  DepthwiseConvKernel(const ConvShape& s, const Knobs& knobs, const float* weights) {
    const int64_t px = knobs.at("px"), threads = knobs.at("threads");
    const int64_t taps = s.kh * s.kw;
    weights_ =
        upload_floats(weights, static_cast<size_t>(s.c * taps), "cuda depthwise conv weights");
    DepthwiseParams& p = p_;
    p.c = static_cast<int>(s.c);
    p.h = static_cast<int>(s.h);
    p.w = static_cast<int>(s.w);
    p.oh = static_cast<int>(s.oh);
    p.ow = static_cast<int>(s.ow);
    p.kh = static_cast<int>(s.kh);
    p.kw = static_cast<int>(s.kw);
    p.sh = static_cast<int>(s.stride_h);
    p.sw = static_cast<int>(s.stride_w);
    p.ph = static_cast<int>(s.pad_h);
    p.pw = static_cast<int>(s.pad_w);
    p.dh = static_cast<int>(s.dil_h);
    p.dw = static_cast<int>(s.dil_w);
    const int64_t gpr = ceil_div(s.ow, px);
    p.groups_per_row = static_cast<int>(gpr);
    p.groups = static_cast<int>(gpr * s.oh);
    smem_ = static_cast<size_t>(taps) * sizeof(float);
    grid_ = dim3(static_cast<unsigned>(s.n * s.c),
                 static_cast<unsigned>(std::min<int64_t>(ceil_div(gpr * s.oh, threads), 65535)));
    const int64_t ks = s.kh == s.kw && (s.kh == 3 || s.kh == 5) ? s.kh : 0;
    launch_ = pick_launch(s.storage, px, threads, ks);
  }

  size_t workspace_bytes() const override { return 0; }
  size_t weight_bytes() const override { return weights_.bytes(); }

  void run(const float* x, float* y, void*, const Epilogue& epilogue,
           cudaStream_t stream) const override {
    launch_(x, weights_.as<float>(), y, p_, epilogue_args(epilogue), grid_, smem_, stream);
    check_launch("cuda depthwise conv");
  }

 private:
  DeviceBuffer weights_;
  DepthwiseParams p_{};
  dim3 grid_;
  size_t smem_ = 0;
  LaunchFn launch_ = nullptr;
};

bool supports(const ConvShape& s) {
  // grid.x = n * c planes (CUDA allows 2^31 - 1).
  return detail::shape_ok_any_storage(s) && s.depthwise() && s.kh * s.kw <= kMaxTaps &&
         s.n * s.c <= detail::kInt32Max;
}

KnobSpace knob_space(const ConvShape&) {
  KnobSpace space;
  space.knobs.push_back({"px", {1, 2, 4}, "consecutive output pixels of a row per thread"});
  space.knobs.push_back({"threads", {64, 128, 256}, "threads per block"});
  return space;
}

// Untuned (no measurement yet): px 4 for rows of 16 pixels or more, 2 from 4, else 1;
// threads the smallest of 64, 128, 256 that covers a plane's pixel groups (else 256).
Knobs default_knobs(const ConvShape& s) {
  const int64_t px = s.ow >= 16 ? 4 : s.ow >= 4 ? 2 : 1;
  const int64_t groups = ceil_div(std::max<int64_t>(1, s.ow), px) * s.oh;
  const int64_t threads = groups <= 64 ? 64 : groups <= 128 ? 128 : 256;
  return {{"px", px}, {"threads", threads}};
}

}  // namespace

const ConvAlgorithm& depthwise_cuda_conv_algorithm() {
  static const ConvAlgorithm algo{
      "depthwise",
      "depthwise convolution (groups = c = k), a row of pixels per thread, any kernel",
      &supports,
      &knob_space,
      &default_knobs,
      &detail::checked_prepare<DepthwiseConvKernel, depthwise_cuda_conv_algorithm>,
  };
  return algo;
}

}  // namespace dlas::cuda

// direct: the straightforward CUDA convolution (cuda_conv.h), for every shape (any groups,
// stride, padding, dilation). A block of `threads` threads owns `kt` output channels of one
// group and threads * px output pixels (flattened over batch and plane); thread t computes
// pixels base + t + j * threads (j < px, so each load and store is coalesced across the
// block) for all kt channels, a px x kt register tile: each input value it loads feeds kt
// FMAs. The weights of the block's channels are staged in shared memory a chunk of input
// channels at a time, laid out [ci][tap][kt] so a thread reads one tap's kt weights
// together (a broadcast: every thread reads the same address). grid = (pixel blocks,
// channel blocks), the second looped over when there are more than CUDA's 65535. Every
// storage type: f16 and bf16 activations are widened on load and rounded once on store,
// the weights and the arithmetic f32.
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

// Weights staged per block (floats): kt * chunk * kh * kw stays within this unless one
// input channel alone needs more (up to 8 * kMaxTaps floats = 32 KiB).
constexpr int64_t kStageFloats = 4096;
constexpr int64_t kMaxTaps = 1024;

struct DirectParams {
  int npix, ohw, ow;   // pixels of the whole batch, of one output plane, its width
  int h, w, hw;        // input plane
  int c, k, cpg, kpg;  // channels, per group
  int kh, kw, taps;    // kernel
  int sh, sw, ph, pw, dh, dw;
  int kblocks_per_group, kblocks;  // channel blocks (of kt) per group, in all
  int chunk;                       // input channels staged at a time
};

template <class T, int KT, int PX, int THREADS>
__global__ void __launch_bounds__(THREADS)
    direct_conv_kernel(const T* __restrict__ x, const float* __restrict__ w, T* __restrict__ y,
                       DirectParams p, EpilogueArgs e) {
  extern __shared__ float sw[];  // [chunk][taps][KT]
  const int tid = threadIdx.x;

  // This thread's pixels, fixed across channel blocks. A pixel past the batch gets a top
  // row far outside the image, so every one of its taps reads as padding.
  int iy0[PX], ix0[PX];
  const T* xi[PX];  // its image's input
#pragma unroll
  for (int j = 0; j < PX; ++j) {
    const int q = blockIdx.x * (THREADS * PX) + j * THREADS + tid;
    const bool valid = q < p.npix;
    const int img = valid ? q / p.ohw : 0;
    const int pix = valid ? q - img * p.ohw : 0;
    const int oy = pix / p.ow, ox = pix - (pix / p.ow) * p.ow;
    iy0[j] = valid ? oy * p.sh - p.ph : -(1 << 30);
    ix0[j] = ox * p.sw - p.pw;
    xi[j] = x + static_cast<int64_t>(img) * p.c * p.hw;
  }

  for (int cb = blockIdx.y; cb < p.kblocks; cb += gridDim.y) {
    const int g = cb / p.kblocks_per_group;
    const int k0 = (cb - g * p.kblocks_per_group) * KT;  // within the group
    float acc[PX][KT];
#pragma unroll
    for (int j = 0; j < PX; ++j)
#pragma unroll
      for (int t = 0; t < KT; ++t) acc[j][t] = 0.f;

    for (int c0 = 0; c0 < p.cpg; c0 += p.chunk) {
      const int cn = min(p.chunk, p.cpg - c0);
      const int per_k = cn * p.taps;  // staged weights of one output channel
      __syncthreads();                // the previous chunk's (or channel block's) readers are done
      for (int i = tid; i < KT * per_k; i += THREADS) {
        const int t = i / per_k, r = i - t * per_k;
        const int km = k0 + t;
        sw[r * KT + t] = km < p.kpg
                             ? __ldg(w + (static_cast<int64_t>(g) * p.kpg + km) * p.cpg * p.taps +
                                     static_cast<int64_t>(c0) * p.taps + r)
                             : 0.f;
      }
      __syncthreads();
      for (int cc = 0; cc < cn; ++cc) {
        const int chan_off = (g * p.cpg + c0 + cc) * p.hw;
        const float* wc = sw + cc * p.taps * KT;
        for (int r = 0; r < p.kh; ++r) {
          for (int s = 0; s < p.kw; ++s) {
            float wr[KT];
#pragma unroll
            for (int t = 0; t < KT; ++t) wr[t] = wc[(r * p.kw + s) * KT + t];
#pragma unroll
            for (int j = 0; j < PX; ++j) {
              const int iy = iy0[j] + r * p.dh, ix = ix0[j] + s * p.dw;
              const bool in = static_cast<unsigned>(iy) < static_cast<unsigned>(p.h) &&
                              static_cast<unsigned>(ix) < static_cast<unsigned>(p.w);
              const float v = in ? ld(xi[j] + chan_off + iy * p.w + ix) : 0.f;
#pragma unroll
              for (int t = 0; t < KT; ++t) acc[j][t] = fmaf(v, wr[t], acc[j][t]);
            }
          }
        }
      }
    }

#pragma unroll
    for (int j = 0; j < PX; ++j) {
      const int q = blockIdx.x * (THREADS * PX) + j * THREADS + tid;
      if (q >= p.npix) continue;
      const int img = q / p.ohw;
      const int64_t base = static_cast<int64_t>(img) * p.k * p.ohw + (q - img * p.ohw);
#pragma unroll
      for (int t = 0; t < KT; ++t) {
        const int km = k0 + t;
        if (km >= p.kpg) break;
        const int kg = g * p.kpg + km;
        const int64_t index = base + static_cast<int64_t>(kg) * p.ohw;
        y[index] = narrow<T>(finish<T>(acc[j][t], kg, index, e));
      }
    }
  }
}

using LaunchFn = void (*)(const float*, const float*, float*, const DirectParams&,
                          const EpilogueArgs&, dim3, size_t, cudaStream_t);

// x and y hold T (16-bit data passes through the float pointers as is).
template <class T, int KT, int PX, int THREADS>
void launch(const float* x, const float* w, float* y, const DirectParams& p, const EpilogueArgs& e,
            dim3 grid, size_t smem, cudaStream_t stream) {
  direct_conv_kernel<T, KT, PX, THREADS><<<grid, THREADS, smem, stream>>>(
      reinterpret_cast<const T*>(x), w, reinterpret_cast<T*>(y), p, e);
}

LaunchFn pick_launch(Storage storage, int64_t kt, int64_t px, int64_t threads) {
  return with_storage_type(storage, [&](auto t) {
    return with_int<1, 2, 4, 8>(kt, [&](auto KT) {
      return with_int<1, 2, 4>(px, [&](auto PX) {
        return with_int<64, 128, 256>(
            threads, [&](auto TH) -> LaunchFn { return &launch<decltype(t), KT, PX, TH>; });
      });
    });
  });
}

class DirectConvKernel final : public ConvKernel {
 public:
  DirectConvKernel(const ConvShape& s, const Knobs& knobs, const float* weights) {
    const int64_t kt = knobs.at("kt"), px = knobs.at("px"), threads = knobs.at("threads");
    const int64_t cpg = s.c / s.groups, kpg = s.k / s.groups, taps = s.kh * s.kw;
    weights_ =
        upload_floats(weights, static_cast<size_t>(s.k * cpg * taps), "cuda direct conv weights");
    const int64_t chunk = std::clamp<int64_t>(kStageFloats / (kt * taps), 1, cpg);
    const int64_t kbpg = ceil_div(kpg, kt);

    DirectParams& p = p_;
    p.npix = static_cast<int>(s.n * s.oh * s.ow);
    p.ohw = static_cast<int>(s.oh * s.ow);
    p.ow = static_cast<int>(s.ow);
    p.h = static_cast<int>(s.h);
    p.w = static_cast<int>(s.w);
    p.hw = static_cast<int>(s.h * s.w);
    p.c = static_cast<int>(s.c);
    p.k = static_cast<int>(s.k);
    p.cpg = static_cast<int>(cpg);
    p.kpg = static_cast<int>(kpg);
    p.kh = static_cast<int>(s.kh);
    p.kw = static_cast<int>(s.kw);
    p.taps = static_cast<int>(taps);
    p.sh = static_cast<int>(s.stride_h);
    p.sw = static_cast<int>(s.stride_w);
    p.ph = static_cast<int>(s.pad_h);
    p.pw = static_cast<int>(s.pad_w);
    p.dh = static_cast<int>(s.dil_h);
    p.dw = static_cast<int>(s.dil_w);
    p.kblocks_per_group = static_cast<int>(kbpg);
    p.kblocks = static_cast<int>(kbpg * s.groups);
    p.chunk = static_cast<int>(chunk);
    smem_ = static_cast<size_t>(kt * chunk * taps) * sizeof(float);
    grid_ = dim3(static_cast<unsigned>(ceil_div(s.n * s.oh * s.ow, threads * px)),
                 static_cast<unsigned>(std::min<int64_t>(kbpg * s.groups, 65535)));
    launch_ = pick_launch(s.storage, kt, px, threads);
  }

  size_t workspace_bytes() const override { return 0; }
  size_t weight_bytes() const override { return weights_.bytes(); }

  void run(const float* x, float* y, void*, const Epilogue& epilogue,
           cudaStream_t stream) const override {
    launch_(x, weights_.as<float>(), y, p_, epilogue_args(epilogue), grid_, smem_, stream);
    check_launch("cuda direct conv");
  }

 private:
  DeviceBuffer weights_;
  DirectParams p_{};
  dim3 grid_;
  size_t smem_ = 0;
  LaunchFn launch_ = nullptr;
};

bool supports(const ConvShape& s) {
  // Channel blocks are looped over past 65535, so only the staged weights bound the shape;
  // the blocks count (k / kt, kt >= 1) stays an int by shape_ok. Every storage type.
  return detail::shape_ok_any_storage(s) && s.kh * s.kw <= kMaxTaps;
}

KnobSpace knob_space(const ConvShape&) {
  KnobSpace space;
  space.knobs.push_back({"kt", {1, 2, 4, 8}, "output channels per thread (register tile)"});
  space.knobs.push_back({"px", {1, 2, 4}, "output pixels per thread (register tile)"});
  space.knobs.push_back({"threads", {64, 128, 256}, "threads per block"});
  return space;
}

// Untuned (no measurement yet): kt the largest power of two up to 8 not above the group's
// output channels, 128 threads, px 4, then px and kt lowered while the grid would have
// fewer than two blocks per nominal SM.
Knobs default_knobs(const ConvShape& s) {
  const int64_t kpg = std::max<int64_t>(1, s.k / std::max<int64_t>(1, s.groups));
  const int64_t npix = std::max<int64_t>(1, s.n * s.oh * s.ow);
  int64_t kt = detail::pow2_floor(kpg, 8), px = 4;
  const int64_t threads = 128;
  auto blocks = [&] { return ceil_div(npix, threads * px) * ceil_div(kpg, kt) * s.groups; };
  while (blocks() < 2 * detail::kNominalSms && (px > 1 || kt > 1)) {
    if (px > 1)
      px /= 2;
    else
      kt /= 2;
  }
  return {{"kt", kt}, {"px", px}, {"threads", threads}};
}

}  // namespace

const ConvAlgorithm& direct_cuda_conv_algorithm() {
  static const ConvAlgorithm algo{
      "direct",       "direct convolution, a pixels x channels register tile per thread, any conv",
      &supports,      &knob_space,
      &default_knobs, &detail::checked_prepare<DirectConvKernel, direct_cuda_conv_algorithm>,
  };
  return algo;
}

}  // namespace dlas::cuda

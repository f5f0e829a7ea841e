// gemm: the implicit-GEMM CUDA convolution (cuda_conv.h). Per group g, the output is the
// product C[M][N] = A[M][K] B[K][N] with M = k/groups output channels, N = n*oh*ow output
// pixels and K = (c/groups)*kh*kw, B being the im2col matrix, which is never materialised:
// each block gathers the B slices it needs straight from the input (padding and bounds
// checked per element; a 1x1 stride-1 unpadded conv reads B's rows contiguously instead).
// A is packed at prepare transposed and zero-padded, [group][Kp][Mp], so its tile loads are
// coalesced and unchecked. The tiled main loop (sgemm_tile.cuh) keeps a bm x bn tile per
// block of 256 threads with a bm/16 x bn/16 register tile per thread; the epilogue is fused
// into the store. grid = (N tiles, M tiles, groups). Every storage type: f16 and bf16
// activations are widened on load and rounded once on store, A and the arithmetic f32; a
// 16-bit layer can instead run on tensor cores (the `tc` knob, tc_conv.cu).
#include <cuda_runtime.h>

#include <algorithm>
#include <memory>
#include <vector>

#include "algo/cuda/conv_common.h"
#include "algo/cuda/epilogue.cuh"
#include "algo/cuda/sgemm_tile.cuh"
#include "dlas/algo/cuda_conv.h"
#include "dlas/core/error.h"

namespace dlas::cuda {
namespace {

using detail::ceil_div;
using detail::round_up;

struct GemmConvParams {
  int npix;            // N = n * oh * ow
  int ohw, ow;         // output plane
  int h, w, hw;        // input plane
  int c, k, cpg, kpg;  // channels, per group
  int kdim, kp, mp;    // reduction depth, padded depth and padded M (A's row stride)
  int taps, kw;
  int sh, sw, ph, pw, dh, dw;
  int splits, slice;  // the reduction split across blocks (grid.z = groups x splits), rows each
  int64_t count;      // output elements (one split's slice of the partials)
};

// B[kk][col] of the general conv: kk = (ci, r, s), col = (image, oy, ox); T the input's
// storage type (widened on load).
template <class T>
struct GatherB {
  const T* img;  // the group's first input channel of this column's image
  int iy0, ix0;  // the column's top-left input coordinate
  bool valid;    // col < N
  int kdim, taps, kw, dh, dw, h, w;
  __device__ __forceinline__ float operator()(int kk) const {
    if (!valid || kk >= kdim) return 0.f;
    const int ci = kk / taps;
    const int rs = kk - ci * taps;
    const int r = rs / kw;
    const int s = rs - r * kw;
    const int iy = iy0 + r * dh, ix = ix0 + s * dw;
    if (static_cast<unsigned>(iy) >= static_cast<unsigned>(h) ||
        static_cast<unsigned>(ix) >= static_cast<unsigned>(w))
      return 0.f;
    return ld(img + (ci * h + iy) * w + ix);
  }
};

// B[kk][col] of a 1x1 stride-1 unpadded conv: input channel kk at the column's pixel.
template <class T>
struct PointwiseB {
  const T* pix;  // the group's first input channel at this column's pixel
  bool valid;
  int kdim, hw;
  __device__ __forceinline__ float operator()(int kk) const {
    return valid && kk < kdim ? ld(pix + kk * hw) : 0.f;
  }
};

// A fetch functor read from reduction row k0 on.
template <class F>
struct FromRow {
  F f;
  int k0;
  __device__ __forceinline__ float operator()(int kk) const { return f(kk + k0); }
};

// partial: with p.splits > 1, this split's f32 sums go to partial[split][index] (every split
// writes its whole slice) and splitk_finish_kernel applies the epilogue.
template <class T, int BM, int BN, int BK, bool kPointwise>
__global__ void __launch_bounds__(256)
    gemm_conv_kernel(const T* __restrict__ x, const float* __restrict__ at, T* __restrict__ y,
                     GemmConvParams p, EpilogueArgs e, float* __restrict__ partial) {
  constexpr int kTM = BM / 16, kTN = BN / 16;
  const int g = blockIdx.z / p.splits, split = blockIdx.z - g * p.splits;
  const int k_begin = split * p.slice, k_len = min(p.kp - k_begin, p.slice);
  const int m0 = blockIdx.y * BM;
  const int n0 = blockIdx.x * BN;
  const int tid = threadIdx.x;

  // This thread's B column (fixed for the whole reduction).
  const int col = n0 + tid % BN;
  const bool valid = col < p.npix;
  const int img = valid ? col / p.ohw : 0;
  const int pix = valid ? col - img * p.ohw : 0;
  const T* xg = x + (static_cast<int64_t>(img) * p.c + static_cast<int64_t>(g) * p.cpg) * p.hw;
  const float* a = at + (static_cast<int64_t>(g) * p.kp + k_begin) * p.mp + m0;

  float acc[kTM][kTN];
#pragma unroll
  for (int i = 0; i < kTM; ++i)
#pragma unroll
    for (int j = 0; j < kTN; ++j) acc[i][j] = 0.f;

  if constexpr (kPointwise) {
    const FromRow<PointwiseB<T>> fetch{{xg + pix, valid, p.kdim, p.hw}, k_begin};
    detail::sgemm_mainloop<BM, BN, BK>(a, p.mp, k_len, fetch, acc);
  } else {
    const int oy = pix / p.ow, ox = pix - (pix / p.ow) * p.ow;
    const FromRow<GatherB<T>> fetch{
        {xg, oy * p.sh - p.ph, ox * p.sw - p.pw, valid, p.kdim, p.taps, p.kw, p.dh, p.dw, p.h, p.w},
        k_begin};
    detail::sgemm_mainloop<BM, BN, BK>(a, p.mp, k_len, fetch, acc);
  }

  const int tx = tid % 16, ty = tid / 16;
#pragma unroll
  for (int j = 0; j < kTN; ++j) {
    const int cj = n0 + tx + 16 * j;
    if (cj >= p.npix) continue;
    const int ij = cj / p.ohw;
    const int64_t base = static_cast<int64_t>(ij) * p.k * p.ohw + (cj - ij * p.ohw);
#pragma unroll
    for (int i = 0; i < kTM; ++i) {
      const int m = m0 + ty + 16 * i;
      if (m >= p.kpg) continue;
      const int kg = g * p.kpg + m;
      const int64_t index = base + static_cast<int64_t>(kg) * p.ohw;
      if (partial)
        partial[split * p.count + index] = acc[i][j];
      else
        y[index] = narrow<T>(finish<T>(acc[i][j], kg, index, e));
    }
  }
}

using LaunchFn = void (*)(const float*, const float*, float*, const GemmConvParams&,
                          const EpilogueArgs&, dim3, float*, cudaStream_t);

// x and y hold T (16-bit data passes through the float pointers as is).
template <class T, int BM, int BN, int BK, bool kPointwise>
void launch(const float* x, const float* at, float* y, const GemmConvParams& p,
            const EpilogueArgs& e, dim3 grid, float* partial, cudaStream_t stream) {
  gemm_conv_kernel<T, BM, BN, BK, kPointwise><<<grid, 256, 0, stream>>>(
      reinterpret_cast<const T*>(x), at, reinterpret_cast<T*>(y), p, e, partial);
  if (partial)
    launch_splitk_finish(partial, p.splits, reinterpret_cast<T*>(y), p.count, p.k, p.ohw, e,
                         stream);
}

// 16-bit layers take the tiles of depth 16 only (kTileDepth16), which keeps the instantiations
// (and the build) small.
constexpr int64_t kTileDepth16 = 16;

LaunchFn pick_launch(Storage storage, int64_t bm, int64_t bn, int64_t bk, bool pointwise) {
#define DLAS_GEMM_CONV_TILE(BM, BN, BK)                                                            \
  if (bm == BM && bn == BN && bk == BK) {                                                          \
    if (storage == Storage::kF32)                                                                  \
      return pointwise ? &launch<float, BM, BN, BK, true> : &launch<float, BM, BN, BK, false>;     \
    if constexpr (BK == kTileDepth16) {                                                            \
      if (storage == Storage::kF16)                                                                \
        return pointwise ? &launch<__half, BM, BN, BK, true> : &launch<__half, BM, BN, BK, false>; \
      return pointwise ? &launch<__nv_bfloat16, BM, BN, BK, true>                                  \
                       : &launch<__nv_bfloat16, BM, BN, BK, false>;                                \
    }                                                                                              \
  }
  DLAS_CUDA_FOR_EACH_SGEMM_TILE(DLAS_GEMM_CONV_TILE)
#undef DLAS_GEMM_CONV_TILE
  fail(ErrorKind::kInternal, "cuda gemm conv: no ", storage_name(storage), " kernel for tile ", bm,
       "x", bn, "x", bk);
}

bool is_pointwise(const ConvShape& s) {
  return s.kh == 1 && s.kw == 1 && s.stride_h == 1 && s.stride_w == 1 && s.pad_h == 0 &&
         s.pad_w == 0 && s.oh == s.h && s.ow == s.w;
}

class GemmConvKernel final : public ConvKernel {
 public:
  GemmConvKernel(const ConvShape& s, const Knobs& knobs, const float* weights) {
    const int64_t bm = knobs.at("bm"), bn = knobs.at("bn"), bk = knobs.at("bk");
    int64_t splits = knobs.at("splits");
    const int64_t cpg = s.c / s.groups, kpg = s.k / s.groups, taps = s.kh * s.kw;
    const int64_t kdim = cpg * taps;
    const int64_t kp = round_up(kdim, bk), mp = round_up(kpg, bm);
    // At[g][kk][m] = w[g * kpg + m][kk], kk = (ci * kh + r) * kw + s as the weights store it.
    std::vector<float> at(static_cast<size_t>(s.groups * kp * mp), 0.f);
    for (int64_t g = 0; g < s.groups; ++g)
      for (int64_t m = 0; m < kpg; ++m) {
        const float* src = weights + (g * kpg + m) * kdim;
        for (int64_t kk = 0; kk < kdim; ++kk)
          at[static_cast<size_t>((g * kp + kk) * mp + m)] = src[kk];
      }
    weights_ = upload_floats(at.data(), at.size(), "cuda gemm conv weights");

    GemmConvParams& p = p_;
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
    p.kdim = static_cast<int>(kdim);
    p.kp = static_cast<int>(kp);
    p.mp = static_cast<int>(mp);
    p.taps = static_cast<int>(taps);
    p.kw = static_cast<int>(s.kw);
    p.sh = static_cast<int>(s.stride_h);
    p.sw = static_cast<int>(s.stride_w);
    p.ph = static_cast<int>(s.pad_h);
    p.pw = static_cast<int>(s.pad_w);
    p.dh = static_cast<int>(s.dil_h);
    p.dw = static_cast<int>(s.dil_w);
    // Every split gets at least one slice, and grid.z stays within CUDA's 65535.
    const int64_t iters = kp / bk;
    while (splits > 1 && s.groups * splits > 65535) splits /= 2;
    const int64_t per = ceil_div(iters, std::min(splits, iters));
    p.splits = static_cast<int>(ceil_div(iters, per));
    p.slice = static_cast<int>(per * bk);
    p.count = s.n * s.k * s.oh * s.ow;
    grid_ =
        dim3(static_cast<unsigned>(ceil_div(s.n * s.oh * s.ow, bn)),
             static_cast<unsigned>(ceil_div(kpg, bm)), static_cast<unsigned>(s.groups * p.splits));
    launch_ = pick_launch(s.storage, bm, bn, bk, is_pointwise(s));
  }

  size_t workspace_bytes() const override {
    return p_.splits > 1 ? static_cast<size_t>(p_.count) * p_.splits * sizeof(float) : 0;
  }
  size_t weight_bytes() const override { return weights_.bytes(); }

  void run(const float* x, float* y, void* workspace, const Epilogue& epilogue,
           cudaStream_t stream) const override {
    float* partial = p_.splits > 1 ? static_cast<float*>(workspace) : nullptr;
    launch_(x, weights_.as<float>(), y, p_, epilogue_args(epilogue), grid_, partial, stream);
    check_launch("cuda gemm conv");
  }

 private:
  DeviceBuffer weights_;
  GemmConvParams p_{};
  dim3 grid_;
  LaunchFn launch_ = nullptr;
};

bool supports(const ConvShape& s) {
  if (!detail::shape_ok_any_storage(s)) return false;
  if (s.storage != Storage::kF32 && !detail::tc_gemm_supports(s)) return false;
  const int64_t kpg = s.k / s.groups, kdim = s.c / s.groups * s.kh * s.kw;
  // grid.z = groups and grid.y = M tiles stay within CUDA's 65535; the padded reduction
  // depth stays an int.
  return s.groups <= 65535 && ceil_div(kpg, 32) <= 65535 && kdim <= (int64_t{1} << 30);
}

bool sixteen_bit(const ConvShape& s) { return s.storage != Storage::kF32; }

// 16-bit layers add `tc`: 1 runs the tensor-core kernel (tc_conv.cu: one 64 x 64 x 32 tile, so
// it ignores bm, bn and bk), 0 the tiled kernel above on widened values.
KnobSpace knob_space(const ConvShape& s) {
  KnobSpace space;
  if (sixteen_bit(s)) space.knobs.push_back({"tc", {0, 1}, "tensor cores (WMMA) for 16-bit data"});
  space.knobs.push_back({"bm", {32, 64, 128}, "output channels per block tile (GEMM M)"});
  space.knobs.push_back({"bn", {32, 64, 128}, "output pixels per block tile (GEMM N)"});
  if (sixteen_bit(s))
    space.knobs.push_back({"bk", {kTileDepth16}, "reduction depth of one shared-memory slice"});
  else
    space.knobs.push_back({"bk", {8, 16}, "reduction depth of one shared-memory slice"});
  space.knobs.push_back(
      {"splits", {1, 2, 4, 8, 16}, "blocks sharing one tile's reduction (split-K), at most"});
  return space;
}

// Untuned: the tile by problem size (conv_common.h); depth 16, the depth of the best point
// for every layer of a quick sweep (8 ResNet/MobileNet-like layers, one H200).
// 16-bit: the same tile, not on tensor cores -- the WMMA kernel measured slower than the
// tiled one on every zoo layer's class at batch 1 and on resnet50 at batch 64 (one H100).
Knobs default_knobs(const ConvShape& s) {
  int64_t bm = 32, bn = 32;
  detail::default_gemm_tile(s.k / std::max<int64_t>(1, s.groups), s.n * s.oh * s.ow, s.groups, bm,
                            bn);
  // Split the reduction until the grid has two blocks per nominal SM, keeping at least 4
  // slices per split: batch-1 layers with few pixels and a long reduction (the 1x1 projections
  // and deep 3x3s on 7x7 planes) otherwise run a few blocks through a long serial loop.
  const int64_t tiles = ceil_div(std::max<int64_t>(1, s.n * s.oh * s.ow), bn) *
                        ceil_div(std::max<int64_t>(1, s.k / std::max<int64_t>(1, s.groups)), bm) *
                        std::max<int64_t>(1, s.groups);
  const int64_t iters =
      ceil_div(std::max<int64_t>(1, s.c / std::max<int64_t>(1, s.groups)) * s.kh * s.kw, 16);
  int64_t splits = 1;
  while (splits < 16 && tiles * splits < 2 * detail::kNominalSms && iters / (splits * 2) >= 4)
    splits *= 2;
  Knobs k = {{"bm", bm}, {"bn", bn}, {"bk", 16}, {"splits", splits}};
  if (sixteen_bit(s)) k["tc"] = 0;
  return k;
}

std::unique_ptr<ConvKernel> prepare(const ConvShape& s, const Knobs& knobs, const float* weights);

}  // namespace

const ConvAlgorithm& gemm_cuda_conv_algorithm() {
  static const ConvAlgorithm algo{
      "gemm",
      "implicit GEMM (im2col gathered on the fly), shared-memory tiles, any conv; 16-bit also "
      "on tensor cores (tc=1)",
      &supports,
      &knob_space,
      &default_knobs,
      &prepare,
  };
  return algo;
}

namespace {
std::unique_ptr<ConvKernel> prepare(const ConvShape& s, const Knobs& knobs, const float* weights) {
  detail::check_prepare(gemm_cuda_conv_algorithm(), s, knobs);
  if (sixteen_bit(s) && knobs.at("tc") == 1) return detail::tc_gemm_prepare(s, weights);
  return std::make_unique<GemmConvKernel>(s, knobs, weights);
}
}  // namespace

}  // namespace dlas::cuda

// The 16-bit (fp16, bf16) implementation of the `gemm` CUDA conv row (cuda_conv.h,
// conv_common.h): activations, residual and output 16-bit, accumulation f32.
//
// gemm on tensor cores: the implicit GEMM of gemm_conv.cu -- per group C[M][N] = A[M][K]
// B[K][N], M the group's output channels, N = n*oh*ow pixels, K = (c/g)*kh*kw -- with 64 x 64
// block tiles, 32-deep slices and four warps of 32 x 32, each four 16x16x16 WMMA products
// (mma.sync on Hopper and Ampere). A (weights) is packed at prepare to the 16-bit type,
// [group][Mp][Kp] zero-padded, so its tile loads are unchecked; B is gathered from the
// input per element (padding and bounds checked). The f32 accumulators go through shared
// memory to the fused epilogue (bias, 16-bit residual, activation), stored in 16 bits.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <mma.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <vector>

#include "algo/cuda/conv_common.h"
#include "algo/cuda/epilogue.cuh"
#include "dlas/algo/cuda_conv.h"
#include "dlas/core/error.h"

namespace dlas::cuda {
namespace {

using detail::ceil_div;
using detail::round_up;

constexpr int kBM = 64, kBN = 64, kBK = 32, kThreads = 128;

struct TcParams {
  int splits;  // K split across blocks (grid.z = groups x splits); > 1: partial sums
  int iters_per_split;
  int64_t count;  // output elements (one split's slice of the partials)
  int npix, ohw, ow;
  int h, w;
  int c, k, cpg, kpg;
  int kdim, kp, mp;
  int taps, kw, sh, sw, ph, pw, dh, dw;
};

template <class T>
__global__ void __launch_bounds__(kThreads)
    tc_conv_kernel(const T* __restrict__ x, const T* __restrict__ a, T* __restrict__ y, TcParams p,
                   const float* __restrict__ bias, const T* __restrict__ residual, int act,
                   float p0, float p1, float* __restrict__ partial) {
  using namespace nvcuda;
  __shared__ __align__(32) T as[kBM][kBK + 8];  // [m][k]
  __shared__ __align__(32) T bs[kBK][kBN + 8];  // [k][n]
  __shared__ __align__(32) float cs[kBM][kBN + 4];
  const int g = blockIdx.z / p.splits, split = blockIdx.z - g * p.splits;
  const int k_begin = split * p.iters_per_split * kBK;
  const int k_end = min(p.kp, k_begin + p.iters_per_split * kBK);
  const int m0 = blockIdx.y * kBM, n0 = blockIdx.x * kBN;
  const int warp = threadIdx.x / 32, wm = warp / 2, wn = warp % 2;
  wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc[2][2];
#pragma unroll
  for (int i = 0; i < 2; ++i)
#pragma unroll
    for (int j = 0; j < 2; ++j) wmma::fill_fragment(acc[i][j], 0.f);

  const T* ag = a + static_cast<int64_t>(g) * p.mp * p.kp;
  // This thread's B column and half of the slice's rows.
  const int col = threadIdx.x % kBN, half = threadIdx.x / kBN;
  const int pix = n0 + col;
  const bool valid = pix < p.npix;
  int img = 0, q = 0, oy = 0, ox = 0;
  if (valid) {
    img = pix / p.ohw;
    q = pix - img * p.ohw;
    oy = q / p.ow;
    ox = q - oy * p.ow;
  }
  const T* xg = x + (static_cast<int64_t>(img) * p.c + static_cast<int64_t>(g) * p.cpg) *
                        static_cast<int64_t>(p.h) * p.w;
  const int iy0 = oy * p.sh - p.ph, ix0 = ox * p.sw - p.pw;
  const T zero = narrow<T>(0.f);

  for (int k0 = k_begin; k0 < k_end; k0 += kBK) {
    for (int e = threadIdx.x; e < kBM * kBK; e += kThreads) {
      const int m = e / kBK, kk = e - m * kBK;
      as[m][kk] = ag[static_cast<int64_t>(m0 + m) * p.kp + k0 + kk];
    }
#pragma unroll 4
    for (int i = 0; i < kBK / 2; ++i) {
      const int kk = half * (kBK / 2) + i;
      const int kg = k0 + kk;
      T v = zero;
      if (valid && kg < p.kdim) {
        const int ci = kg / p.taps;
        const int rs = kg - ci * p.taps;
        const int r = rs / p.kw;
        const int s = rs - r * p.kw;
        const int iy = iy0 + r * p.dh, ix = ix0 + s * p.dw;
        if (static_cast<unsigned>(iy) < static_cast<unsigned>(p.h) &&
            static_cast<unsigned>(ix) < static_cast<unsigned>(p.w))
          v = xg[(static_cast<int64_t>(ci) * p.h + iy) * p.w + ix];
      }
      bs[kk][col] = v;
    }
    __syncthreads();
#pragma unroll
    for (int kk = 0; kk < kBK; kk += 16) {
      wmma::fragment<wmma::matrix_a, 16, 16, 16, T, wmma::row_major> fa[2];
      wmma::fragment<wmma::matrix_b, 16, 16, 16, T, wmma::row_major> fb[2];
#pragma unroll
      for (int i = 0; i < 2; ++i) wmma::load_matrix_sync(fa[i], &as[wm * 32 + i * 16][kk], kBK + 8);
#pragma unroll
      for (int j = 0; j < 2; ++j) wmma::load_matrix_sync(fb[j], &bs[kk][wn * 32 + j * 16], kBN + 8);
#pragma unroll
      for (int i = 0; i < 2; ++i)
#pragma unroll
        for (int j = 0; j < 2; ++j) wmma::mma_sync(acc[i][j], fa[i], fb[j], acc[i][j]);
    }
    __syncthreads();
  }
#pragma unroll
  for (int i = 0; i < 2; ++i)
#pragma unroll
    for (int j = 0; j < 2; ++j)
      wmma::store_matrix_sync(&cs[wm * 32 + i * 16][wn * 32 + j * 16], acc[i][j], kBN + 4,
                              wmma::mem_row_major);
  __syncthreads();
  if (!valid) return;
  for (int m = half; m < kBM; m += 2) {
    const int mo = m0 + m;
    if (mo >= p.kpg) break;
    const int k = g * p.kpg + mo;
    const int64_t index = (static_cast<int64_t>(img) * p.k + k) * p.ohw + q;
    float v = cs[m][col];
    if (partial) {  // split K: this split's slice, summed in order by splitk_finish_kernel
      partial[split * p.count + index] = v;
      continue;
    }
    if (bias) v += __ldg(bias + k);
    if (residual) v += ld(residual + index);
    y[index] = narrow<T>(activate(v, act, p0, p1));
  }
}

// Host 16-bit conversion of the packed weights (round to nearest even).
uint16_t to_bits(float f, Storage s) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  if (s == Storage::kBF16) {
    if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((u >> 16) | 0x40);  // NaN
    u += 0x7fffu + ((u >> 16) & 1u);
    return static_cast<uint16_t>(u >> 16);
  }
  return __half_as_ushort(__float2half_rn(f));
}

class TcConvKernel final : public ConvKernel {
 public:
  TcConvKernel(const ConvShape& s, const float* weights) : storage_(s.storage) {
    TcParams& p = p_;
    p.npix = static_cast<int>(s.n * s.oh * s.ow);
    p.ohw = static_cast<int>(s.oh * s.ow);
    p.ow = static_cast<int>(s.ow);
    p.h = static_cast<int>(s.h);
    p.w = static_cast<int>(s.w);
    p.c = static_cast<int>(s.c);
    p.k = static_cast<int>(s.k);
    p.cpg = static_cast<int>(s.c / s.groups);
    p.kpg = static_cast<int>(s.k / s.groups);
    p.taps = static_cast<int>(s.kh * s.kw);
    p.kw = static_cast<int>(s.kw);
    p.kdim = p.cpg * p.taps;
    p.kp = static_cast<int>(round_up(p.kdim, kBK));
    p.mp = static_cast<int>(round_up(p.kpg, kBM));
    p.sh = static_cast<int>(s.stride_h);
    p.sw = static_cast<int>(s.stride_w);
    p.ph = static_cast<int>(s.pad_h);
    p.pw = static_cast<int>(s.pad_w);
    p.dh = static_cast<int>(s.dil_h);
    p.dw = static_cast<int>(s.dil_w);
    std::vector<uint16_t> packed(static_cast<size_t>(s.groups) * p.mp * p.kp, 0);
    for (int64_t g = 0; g < s.groups; ++g)
      for (int m = 0; m < p.kpg; ++m)
        for (int kk = 0; kk < p.kdim; ++kk)
          packed[(static_cast<size_t>(g) * p.mp + m) * p.kp + kk] =
              to_bits(weights[(g * p.kpg + m) * static_cast<int64_t>(p.kdim) + kk], storage_);
    weights_ = DeviceBuffer(packed.size() * sizeof(uint16_t), "cuda tensor-core conv weights");
    weights_.upload(packed.data(), packed.size() * sizeof(uint16_t));
    // Split K until the grid has two blocks per nominal SM, keeping at least 4 slices per
    // block: batch-1 layers with few pixels and a long reduction (the deep 3x3s) otherwise
    // run a few blocks through a long serial loop.
    const int64_t tiles = ceil_div(p.npix, kBN) * (p.mp / kBM) * s.groups;
    const int64_t iters = p.kp / kBK;
    int64_t splits = 1;
    while (splits < 16 && tiles * splits < 2 * detail::kNominalSms && iters / (splits * 2) >= 4 &&
           s.groups * splits * 2 <= 65535)
      splits *= 2;
    p.splits = static_cast<int>(splits);
    p.iters_per_split = static_cast<int>(ceil_div(iters, splits));
    count_ = s.n * s.k * s.oh * s.ow;
    p.count = count_;
    channels_ = s.k;
    inner_ = s.oh * s.ow;
    grid_ = dim3(static_cast<unsigned>(ceil_div(p.npix, kBN)), static_cast<unsigned>(p.mp / kBM),
                 static_cast<unsigned>(s.groups * splits));
  }

  size_t workspace_bytes() const override {
    return p_.splits > 1 ? static_cast<size_t>(count_) * p_.splits * sizeof(float) : 0;
  }
  size_t weight_bytes() const override { return weights_.bytes(); }

  void run(const float* x, float* y, void* workspace, const Epilogue& e,
           cudaStream_t stream) const override {
    // Every split writes its whole slice (zeros past its reduction range): no clearing.
    float* partial = p_.splits > 1 ? static_cast<float*>(workspace) : nullptr;
    if (storage_ == Storage::kF16) {
      launch(reinterpret_cast<const __half*>(x), reinterpret_cast<__half*>(y), e, partial, stream);
    } else {
      launch(reinterpret_cast<const __nv_bfloat16*>(x), reinterpret_cast<__nv_bfloat16*>(y), e,
             partial, stream);
    }
    check_launch("cuda tensor-core conv");
  }

 private:
  template <class T>
  void launch(const T* x, T* y, const Epilogue& e, float* partial, cudaStream_t stream) const {
    const T* residual = reinterpret_cast<const T*>(e.residual);
    tc_conv_kernel<T><<<grid_, kThreads, 0, stream>>>(x, weights_.as<T>(), y, p_, e.bias, residual,
                                                      static_cast<int>(e.act), e.p0, e.p1, partial);
    if (partial)
      launch_splitk_finish(partial, p_.splits, y, count_, channels_, inner_, epilogue_args(e),
                           stream);
  }

  Storage storage_;
  DeviceBuffer weights_;
  TcParams p_{};
  dim3 grid_;
  int64_t count_ = 0, channels_ = 1, inner_ = 1;
};

bool sixteen_bit(const ConvShape& s) {
  return s.storage == Storage::kF16 || s.storage == Storage::kBF16;
}

}  // namespace

namespace detail {

bool tc_gemm_supports(const ConvShape& s) {
  if (!sixteen_bit(s) || !shape_ok_any_storage(s) || s.depthwise()) return false;
  const int64_t kpg = s.k / s.groups, kdim = s.c / s.groups * s.kh * s.kw;
  return s.groups <= 65535 && ceil_div(kpg, kBM) <= 65535 && kdim <= (int64_t{1} << 30) &&
         ceil_div(s.n * s.oh * s.ow, kBN) <= kInt32Max;
}

std::unique_ptr<ConvKernel> tc_gemm_prepare(const ConvShape& s, const float* w) {
  DLAS_CHECK(shape_ok_any_storage(s), ErrorKind::kInvalidInput, "cuda gemm conv: invalid shape ",
             s.str());
  DLAS_CHECK(tc_gemm_supports(s), ErrorKind::kUnsupported, "cuda gemm conv (",
             storage_name(s.storage), ") does not support ", s.str());
  return std::make_unique<TcConvKernel>(s, w);
}

}  // namespace detail

const char* storage_name(Storage s) {
  return s == Storage::kF16 ? "f16" : s == Storage::kBF16 ? "bf16" : "f32";
}

}  // namespace dlas::cuda

// The CUDA plan's ops besides convolution (cuda_conv.h): epilogue, per-channel affine over a
// channel concatenation, concat, broadcast binary ops, activations, pooling, global pooling,
// the classifier's GEMM and softmax. NCHW / row-major; the elementwise ops, pooling, concat
// and the affine also on 16-bit data (f32 arithmetic, one rounding per output), the GEMM and
// softmax in f32. Bandwidth-bound kernels with
// one thread per element (grid-stride), except the reductions (one warp or block per row)
// and the GEMM (a warp per output row when the batch is small, a tiled kernel otherwise).
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cfloat>

#include "algo/cuda/epilogue.cuh"
#include "dlas/core/error.h"

namespace dlas::cuda {
namespace {

constexpr int kThreads = 256;

unsigned grid_for(int64_t count) {
  const int64_t blocks = (count + kThreads - 1) / kThreads;
  return static_cast<unsigned>(std::clamp<int64_t>(blocks, 1, 65535 * 8));
}

// In place (x == y) is allowed: each element is read, then written, by one thread.
template <class T>
__global__ void epilogue_kernel(const T* x, T* y, int64_t count, int64_t channels, int64_t inner,
                                EpilogueArgs e) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < count;
       i += int64_t{gridDim.x} * blockDim.x)
    y[i] = narrow<T>(finish<T>(as_float(x[i]), (i / inner) % channels, i, e));
}

// Up to 8 parts per launch; more parts take more launches over disjoint channel ranges.
constexpr int kMaxParts = 8;
struct Parts {
  const void* data[kMaxParts];
  int64_t channels[kMaxParts];
  int64_t first[kMaxParts];  // the part's first channel in the output
  int count;
};

template <class T>
__global__ void channel_affine_kernel(Parts parts, int64_t n, int64_t total_channels, int64_t inner,
                                      int64_t part_channels, int64_t first_channel,
                                      const float* __restrict__ scale,
                                      const float* __restrict__ shift, int act, float p0, float p1,
                                      T* __restrict__ y) {
  // This launch covers output channels [first_channel, first_channel + part_channels).
  const int64_t count = n * part_channels * inner;
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < count;
       i += int64_t{gridDim.x} * blockDim.x) {
    const int64_t q = i % inner;
    const int64_t cl = (i / inner) % part_channels;
    const int64_t b = i / (inner * part_channels);
    const int64_t c = first_channel + cl;
    int p = 0;
    while (p + 1 < parts.count && c >= parts.first[p + 1]) ++p;
    const float v = ld(static_cast<const T*>(parts.data[p]) +
                       (b * parts.channels[p] + (c - parts.first[p])) * inner + q);
    y[(b * total_channels + c) * inner + q] =
        narrow<T>(activate(v * scale[c] + shift[c], act, p0, p1));
  }
}

template <class T>
__global__ void concat_kernel(const T* __restrict__ x, int64_t outer, int64_t part_row,
                              int64_t out_row, int64_t offset, T* __restrict__ y) {
  const int64_t count = outer * part_row;
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < count;
       i += int64_t{gridDim.x} * blockDim.x) {
    const int64_t o = i / part_row, r = i % part_row;
    y[o * out_row + offset + r] = x[i];
  }
}

constexpr int kMaxRank = 6;
struct Strides {
  int64_t out[kMaxRank];             // output dims
  int64_t a[kMaxRank], b[kMaxRank];  // element strides, 0 where broadcast
  int rank;
};

__device__ __forceinline__ float binary_op(int op, float a, float b) {
  switch (op) {
    case static_cast<int>(BinaryOp::kAdd):
      return a + b;
    case static_cast<int>(BinaryOp::kSub):
      return a - b;
    case static_cast<int>(BinaryOp::kMul):
      return a * b;
    case static_cast<int>(BinaryOp::kDiv):
      return a / b;
    case static_cast<int>(BinaryOp::kMax):
      return fmaxf(a, b);
    default:
      return fminf(a, b);
  }
}

template <class T>
__global__ void binary_kernel(int op, const T* __restrict__ a, const T* __restrict__ b,
                              T* __restrict__ y, int64_t count, Strides s) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < count;
       i += int64_t{gridDim.x} * blockDim.x) {
    int64_t rest = i, ia = 0, ib = 0;
    for (int d = s.rank - 1; d >= 0; --d) {
      const int64_t coord = rest % s.out[d];
      rest /= s.out[d];
      ia += coord * s.a[d];
      ib += coord * s.b[d];
    }
    y[i] = narrow<T>(binary_op(op, ld(a + ia), ld(b + ib)));
  }
}

// y = x * s with s one value per (row) of `inner` elements: the SE block's channel scale.
template <class T>
__global__ void scale_rows_kernel(const T* __restrict__ x, const T* __restrict__ s,
                                  T* __restrict__ y, int64_t count, int64_t inner) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < count;
       i += int64_t{gridDim.x} * blockDim.x)
    y[i] = narrow<T>(ld(x + i) * ld(s + i / inner));
}

template <class T>
__global__ void activation_kernel(const T* x, T* y, int64_t count, int act, float p0, float p1) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < count;
       i += int64_t{gridDim.x} * blockDim.x)
    y[i] = narrow<T>(activate(as_float(x[i]), act, p0, p1));
}

__global__ void leaky_relu_kernel(const float* __restrict__ x, float* __restrict__ y, int64_t count,
                                  float alpha) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < count;
       i += int64_t{gridDim.x} * blockDim.x) {
    const float v = x[i];
    y[i] = v >= 0.f ? v : v * alpha;
  }
}

template <class T, bool kMax>
__global__ void pool_kernel(const T* __restrict__ x, T* __restrict__ y, PoolShape s,
                            bool count_include_pad) {
  const int64_t count = s.n * s.c * s.oh * s.ow;
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < count;
       i += int64_t{gridDim.x} * blockDim.x) {
    const int64_t ox = i % s.ow, oy = (i / s.ow) % s.oh, plane = i / (s.ow * s.oh);
    const T* xp = x + plane * s.h * s.w;
    float acc = kMax ? -FLT_MAX : 0.f;
    int64_t taken = 0;
    for (int64_t ky = 0; ky < s.kh; ++ky) {
      const int64_t iy = oy * s.stride_h - s.pad_h + ky * s.dil_h;
      for (int64_t kx = 0; kx < s.kw; ++kx) {
        const int64_t ix = ox * s.stride_w - s.pad_w + kx * s.dil_w;
        if (iy < 0 || iy >= s.h || ix < 0 || ix >= s.w) continue;
        const float v = ld(xp + iy * s.w + ix);
        acc = kMax ? fmaxf(acc, v) : acc + v;
        ++taken;
      }
    }
    if (!kMax) {
      int64_t divisor = taken;
      if (count_include_pad) {
        // ONNX: the window clipped to the padded input (pads count, the area past them not).
        const int64_t y0 = oy * s.stride_h - s.pad_h, x0 = ox * s.stride_w - s.pad_w;
        const int64_t y1 = min(y0 + s.kh, s.h + s.pad_b), x1 = min(x0 + s.kw, s.w + s.pad_r);
        divisor = (y1 - y0) * (x1 - x0);
      }
      acc = divisor > 0 ? acc / static_cast<float>(divisor) : 0.f;
    }
    y[i] = narrow<T>(acc);
  }
}

__device__ __forceinline__ float warp_sum(float v) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}
__device__ __forceinline__ float warp_max(float v) {
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}

// One warp per row.
template <class T>
__global__ void global_pool_kernel(const T* __restrict__ x, T* __restrict__ y, int64_t rows,
                                   int64_t hw, bool max) {
  const int64_t row = blockIdx.x * int64_t{blockDim.x / 32} + threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  if (row >= rows) return;
  const T* xr = x + row * hw;
  float acc = max ? -FLT_MAX : 0.f;
  for (int64_t i = lane; i < hw; i += 32) {
    const float v = ld(xr + i);
    acc = max ? fmaxf(acc, v) : acc + v;
  }
  acc = max ? warp_max(acc) : warp_sum(acc);
  if (lane == 0) y[row] = narrow<T>(max ? acc : acc / static_cast<float>(hw));
}

// GEMV-like GEMM for small m: one warp per (row of A, output column), the reduction over k
// split across lanes (coalesced reads of A's row and of B's row when B is [n][k]).
__global__ void gemm_warp_kernel(const float* __restrict__ a, const float* __restrict__ b,
                                 bool trans_b, const float* __restrict__ bias,
                                 float* __restrict__ y, int64_t m, int64_t n, int64_t k,
                                 float alpha, float beta, int act) {
  const int64_t warp = blockIdx.x * int64_t{blockDim.x / 32} + threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  if (warp >= m * n) return;
  const int64_t row = warp / n, col = warp % n;
  const float* ar = a + row * k;
  float acc = 0.f;
  if (trans_b) {
    const float* br = b + col * k;
    for (int64_t i = lane; i < k; i += 32) acc += ar[i] * __ldg(br + i);
  } else {
    for (int64_t i = lane; i < k; i += 32) acc += ar[i] * __ldg(b + i * n + col);
  }
  acc = warp_sum(acc);
  if (lane == 0) {
    float v = alpha * acc + (bias ? beta * bias[col] : 0.f);
    y[row * n + col] = activate(v, act, 0.f, 0.f);
  }
}

// Tiled GEMM for larger m: 32x32 output tile per block of 16x16 threads (2x2 each).
constexpr int kTile = 32, kDepth = 16;
__global__ void gemm_tiled_kernel(const float* __restrict__ a, const float* __restrict__ b,
                                  bool trans_b, const float* __restrict__ bias,
                                  float* __restrict__ y, int64_t m, int64_t n, int64_t k,
                                  float alpha, float beta, int act) {
  __shared__ float as[kDepth][kTile + 1];
  __shared__ float bs[kDepth][kTile + 1];
  const int tx = threadIdx.x % 16, ty = threadIdx.x / 16;
  const int64_t row0 = blockIdx.y * int64_t{kTile}, col0 = blockIdx.x * int64_t{kTile};
  float acc[2][2] = {{0.f, 0.f}, {0.f, 0.f}};
  for (int64_t k0 = 0; k0 < k; k0 += kDepth) {
    for (int e = threadIdx.x; e < kDepth * kTile; e += 256) {
      const int kk = e % kDepth, mm = e / kDepth;
      const int64_t r = row0 + mm, kq = k0 + kk;
      as[kk][mm] = r < m && kq < k ? a[r * k + kq] : 0.f;
      const int64_t c = col0 + mm;
      bs[kk][mm] = c < n && kq < k ? (trans_b ? b[c * k + kq] : b[kq * n + c]) : 0.f;
    }
    __syncthreads();
#pragma unroll
    for (int kk = 0; kk < kDepth; ++kk)
#pragma unroll
      for (int i = 0; i < 2; ++i)
#pragma unroll
        for (int j = 0; j < 2; ++j) acc[i][j] += as[kk][ty * 2 + i] * bs[kk][tx * 2 + j];
    __syncthreads();
  }
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 2; ++j) {
      const int64_t r = row0 + ty * 2 + i, c = col0 + tx * 2 + j;
      if (r < m && c < n) {
        const float v = alpha * acc[i][j] + (bias ? beta * bias[c] : 0.f);
        y[r * n + c] = activate(v, act, 0.f, 0.f);
      }
    }
}

// One block per row: max, sum of exp, then the outputs.
__global__ void softmax_kernel(const float* __restrict__ x, float* __restrict__ y, int64_t cols,
                               bool log) {
  __shared__ float partial[32];
  const float* xr = x + blockIdx.x * cols;
  float* yr = y + blockIdx.x * cols;
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, warps = blockDim.x / 32;
  float m = -FLT_MAX;
  for (int64_t i = threadIdx.x; i < cols; i += blockDim.x) m = fmaxf(m, xr[i]);
  m = warp_max(m);
  if (lane == 0) partial[warp] = m;
  __syncthreads();
  m = -FLT_MAX;
  for (int w = 0; w < warps; ++w) m = fmaxf(m, partial[w]);
  __syncthreads();
  float s = 0.f;
  for (int64_t i = threadIdx.x; i < cols; i += blockDim.x) s += __expf(xr[i] - m);
  s = warp_sum(s);
  if (lane == 0) partial[warp] = s;
  __syncthreads();
  s = 0.f;
  for (int w = 0; w < warps; ++w) s += partial[w];
  const float ls = logf(s);
  for (int64_t i = threadIdx.x; i < cols; i += blockDim.x)
    yr[i] = log ? xr[i] - m - ls : __expf(xr[i] - m - ls);
}

// One element of storage type `t` as f32, and back (round to nearest even).
__device__ __forceinline__ float load_as_float(const void* p, int64_t i, int t) {
  if (t == static_cast<int>(Storage::kF16)) return __half2float(static_cast<const __half*>(p)[i]);
  if (t == static_cast<int>(Storage::kBF16))
    return __bfloat162float(static_cast<const __nv_bfloat16*>(p)[i]);
  return static_cast<const float*>(p)[i];
}
__device__ __forceinline__ void store_float(void* p, int64_t i, int t, float v) {
  if (t == static_cast<int>(Storage::kF16))
    static_cast<__half*>(p)[i] = __float2half_rn(v);
  else if (t == static_cast<int>(Storage::kBF16))
    static_cast<__nv_bfloat16*>(p)[i] = __float2bfloat16_rn(v);
  else
    static_cast<float*>(p)[i] = v;
}

__global__ void convert_kernel(const void* x, int from, void* y, int to, int64_t count) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < count;
       i += int64_t{gridDim.x} * blockDim.x)
    store_float(y, i, to, load_as_float(x, i, from));
}

}  // namespace

void convert(const void* x, Storage from, void* y, Storage to, int64_t count, cudaStream_t stream) {
  if (count == 0) return;
  convert_kernel<<<grid_for(count), kThreads, 0, stream>>>(x, static_cast<int>(from), y,
                                                           static_cast<int>(to), count);
  check_launch("convert kernel");
}

void apply_epilogue(const float* x, float* y, int64_t count, int64_t channels, int64_t inner,
                    const Epilogue& e, cudaStream_t stream, Storage storage) {
  if (count == 0) return;
  with_storage_type(storage, [&](auto t) {
    using T = decltype(t);
    epilogue_kernel<T><<<grid_for(count), kThreads, 0, stream>>>(
        reinterpret_cast<const T*>(x), reinterpret_cast<T*>(y), count,
        std::max<int64_t>(channels, 1), std::max<int64_t>(inner, 1), epilogue_args(e));
  });
  check_launch("epilogue kernel");
}

void channel_affine(const std::vector<ChannelPart>& parts, int64_t n, int64_t inner,
                    const float* scale, const float* shift, Activation act, float p0, float p1,
                    float* y, cudaStream_t stream, Storage storage) {
  int64_t total = 0;
  for (const ChannelPart& p : parts) total += p.channels;
  if (total == 0 || n * inner == 0) return;
  for (size_t begin = 0; begin < parts.size(); begin += kMaxParts) {
    Parts pk{};
    int64_t first = 0;
    for (size_t j = 0; j < begin; ++j) first += parts[j].channels;
    const int64_t launch_first = first;
    pk.count = static_cast<int>(std::min<size_t>(kMaxParts, parts.size() - begin));
    for (int j = 0; j < pk.count; ++j) {
      pk.data[j] = parts[begin + j].data;
      pk.channels[j] = parts[begin + j].channels;
      pk.first[j] = first;
      first += parts[begin + j].channels;
    }
    const int64_t launch_channels = first - launch_first;
    if (launch_channels == 0) continue;
    with_storage_type(storage, [&](auto t) {
      using T = decltype(t);
      channel_affine_kernel<T><<<grid_for(n * launch_channels * inner), kThreads, 0, stream>>>(
          pk, n, total, inner, launch_channels, launch_first, scale, shift, static_cast<int>(act),
          p0, p1, reinterpret_cast<T*>(y));
    });
    check_launch("channel affine kernel");
  }
}

void concat(const std::vector<ConcatPart>& parts, int64_t outer, int64_t inner, float* y,
            cudaStream_t stream, Storage storage) {
  int64_t total = 0;
  for (const ConcatPart& p : parts) total += p.dim;
  int64_t offset = 0;
  for (const ConcatPart& p : parts) {
    const int64_t part_row = p.dim * inner;
    if (part_row > 0 && outer > 0) {
      with_storage_type(storage, [&](auto t) {
        using T = decltype(t);
        concat_kernel<T><<<grid_for(outer * part_row), kThreads, 0, stream>>>(
            reinterpret_cast<const T*>(p.data), outer, part_row, total * inner, offset,
            reinterpret_cast<T*>(y));
      });
      check_launch("concat kernel");
    }
    offset += part_row;
  }
}

void binary(BinaryOp op, const float* a, const std::vector<int64_t>& a_shape, const float* b,
            const std::vector<int64_t>& b_shape, float* y, const std::vector<int64_t>& out_shape,
            cudaStream_t stream, Storage storage) {
  const int rank = static_cast<int>(out_shape.size());
  DLAS_CHECK(rank <= kMaxRank, ErrorKind::kUnsupported, "CUDA binary op: rank ", rank, " is above ",
             kMaxRank);
  int64_t count = 1;
  for (int64_t d : out_shape) count *= d;
  if (count == 0) return;
  // The SE block's x * s[n][c][1][1] (and the reverse): one scale per row of inner elements.
  if (op == BinaryOp::kMul && rank == 4 && a_shape == out_shape && b_shape.size() == 4 &&
      b_shape[0] == out_shape[0] && b_shape[1] == out_shape[1] && b_shape[2] == 1 &&
      b_shape[3] == 1) {
    with_storage_type(storage, [&](auto t) {
      using T = decltype(t);
      scale_rows_kernel<T><<<grid_for(count), kThreads, 0, stream>>>(
          reinterpret_cast<const T*>(a), reinterpret_cast<const T*>(b), reinterpret_cast<T*>(y),
          count, out_shape[2] * out_shape[3]);
    });
    check_launch("scale kernel");
    return;
  }
  Strides s{};
  s.rank = rank;
  auto strides_of = [&](const std::vector<int64_t>& shape, int64_t* out) {
    const int offset = rank - static_cast<int>(shape.size());
    int64_t stride = 1;
    for (int d = rank - 1; d >= 0; --d) {
      const int sd = d - offset;
      const int64_t extent = sd >= 0 ? shape[sd] : 1;
      out[d] = extent == 1 ? 0 : stride;
      stride *= extent;
    }
  };
  for (int d = 0; d < rank; ++d) s.out[d] = out_shape[d];
  strides_of(a_shape, s.a);
  strides_of(b_shape, s.b);
  with_storage_type(storage, [&](auto t) {
    using T = decltype(t);
    binary_kernel<T><<<grid_for(count), kThreads, 0, stream>>>(
        static_cast<int>(op), reinterpret_cast<const T*>(a), reinterpret_cast<const T*>(b),
        reinterpret_cast<T*>(y), count, s);
  });
  check_launch("binary kernel");
}

void activation(const float* x, float* y, int64_t count, Activation act, float p0, float p1,
                cudaStream_t stream, Storage storage) {
  if (count == 0) return;
  with_storage_type(storage, [&](auto t) {
    using T = decltype(t);
    activation_kernel<T><<<grid_for(count), kThreads, 0, stream>>>(reinterpret_cast<const T*>(x),
                                                                   reinterpret_cast<T*>(y), count,
                                                                   static_cast<int>(act), p0, p1);
  });
  check_launch("activation kernel");
}

void leaky_relu(const float* x, float* y, int64_t count, float alpha, cudaStream_t stream) {
  if (count == 0) return;
  leaky_relu_kernel<<<grid_for(count), kThreads, 0, stream>>>(x, y, count, alpha);
  check_launch("leaky relu kernel");
}

void max_pool(const float* x, float* y, const PoolShape& s, cudaStream_t stream, Storage storage) {
  const int64_t count = s.n * s.c * s.oh * s.ow;
  if (count == 0) return;
  with_storage_type(storage, [&](auto t) {
    using T = decltype(t);
    pool_kernel<T, true><<<grid_for(count), kThreads, 0, stream>>>(
        reinterpret_cast<const T*>(x), reinterpret_cast<T*>(y), s, false);
  });
  check_launch("max pool kernel");
}

void average_pool(const float* x, float* y, const PoolShape& s, bool count_include_pad,
                  cudaStream_t stream, Storage storage) {
  const int64_t count = s.n * s.c * s.oh * s.ow;
  if (count == 0) return;
  with_storage_type(storage, [&](auto t) {
    using T = decltype(t);
    pool_kernel<T, false><<<grid_for(count), kThreads, 0, stream>>>(
        reinterpret_cast<const T*>(x), reinterpret_cast<T*>(y), s, count_include_pad);
  });
  check_launch("average pool kernel");
}

void global_pool(const float* x, float* y, int64_t rows, int64_t hw, bool max, cudaStream_t stream,
                 Storage storage) {
  if (rows == 0) return;
  const int64_t warps_per_block = kThreads / 32;
  const auto blocks = static_cast<unsigned>((rows + warps_per_block - 1) / warps_per_block);
  with_storage_type(storage, [&](auto t) {
    using T = decltype(t);
    global_pool_kernel<T><<<blocks, kThreads, 0, stream>>>(reinterpret_cast<const T*>(x),
                                                           reinterpret_cast<T*>(y), rows,
                                                           std::max<int64_t>(hw, 1), max);
  });
  check_launch("global pool kernel");
}

void gemm(const float* a, const float* b, bool trans_b, const float* bias, float* y, int64_t m,
          int64_t n, int64_t k, float alpha, float beta_bias, Activation act, cudaStream_t stream) {
  if (m == 0 || n == 0) return;
  DLAS_CHECK(act == Activation::kNone || act == Activation::kRelu || act == Activation::kSigmoid,
             ErrorKind::kUnsupported, "CUDA gemm: activation ", activation_name(act));
  if (m <= 8) {
    const int64_t warps = m * n, per_block = kThreads / 32;
    const auto blocks = static_cast<unsigned>((warps + per_block - 1) / per_block);
    gemm_warp_kernel<<<blocks, kThreads, 0, stream>>>(a, b, trans_b, bias, y, m, n, k, alpha,
                                                      beta_bias, static_cast<int>(act));
  } else {
    const dim3 grid(static_cast<unsigned>((n + kTile - 1) / kTile),
                    static_cast<unsigned>((m + kTile - 1) / kTile));
    gemm_tiled_kernel<<<grid, 256, 0, stream>>>(a, b, trans_b, bias, y, m, n, k, alpha, beta_bias,
                                                static_cast<int>(act));
  }
  check_launch("gemm kernel");
}

void softmax(const float* x, float* y, int64_t rows, int64_t cols, bool log, cudaStream_t stream) {
  if (rows == 0 || cols == 0) return;
  softmax_kernel<<<static_cast<unsigned>(rows), kThreads, 0, stream>>>(x, y, cols, log);
  check_launch("softmax kernel");
}

}  // namespace dlas::cuda

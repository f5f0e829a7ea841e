// winograd: the CUDA Winograd convolution (cuda_conv.h), F(2x2, 3x3) or F(4x4, 3x3) (the
// `variant` knob: output tile m), for dense 3x3 stride-1 undilated convs. With alpha = m + 2
// and T = n * ceil(oh / m) * ceil(ow / m) output tiles, one run is three kernels:
//   1. input transform: thread (tile t, channel c) reads its alpha x alpha input patch
//      (zero outside the image) and writes V[xi][c][t] = (B^T d B)[xi];
//   2. alpha^2 batched GEMMs (blockIdx.z = xi): M[xi][k][t] = sum_c U[xi][k][c] V[xi][c][t],
//      the shared tiled main loop (sgemm_tile.cuh) with U packed at prepare as
//      Ut[xi][Cp][Kp] (transposed, zero-padded to the tile);
//   3. output transform: thread (tile t, channel k) computes A^T M[.][k][t] A and writes
//      the valid pixels of its m x m output tile through the fused epilogue.
// U = G g G^T is computed on the host in double (winograd_common.h, shared with the CPU
// winograds); B^T and A^T are the ones documented in f32_wino_template.h (points 0, 1, -1,
// inf for F(2, 3); 0, 1, -1, 1/2, -1/2, inf for F(4, 3)). Workspace: V then M. Every
// storage type: f16 and bf16 inputs are widened by the input transform and the output
// transform rounds once on store; U, V, M and the arithmetic are f32.
#include <cuda_runtime.h>

#include <algorithm>
#include <memory>
#include <vector>

#include "algo/conv/winograd_common.h"
#include "algo/cuda/conv_common.h"
#include "algo/cuda/epilogue.cuh"
#include "algo/cuda/sgemm_tile.cuh"
#include "dlas/algo/cuda_conv.h"
#include "dlas/core/error.h"

namespace dlas::cuda {
namespace {

using detail::ceil_div;
using detail::round_up;

constexpr int kTransformThreads = 256;

struct WinoParams {
  int c, k, h, w, oh, ow;
  int ph, pw;
  int tiles_h, tiles_w, tiles_per_image, tiles;  // T = tiles
  int cp, kp;                                    // padded GEMM depth (C) and rows (K)
};

// t = B^T d for alpha = M + 2 values.
template <int M>
__device__ __forceinline__ void input_1d(const float* d, float* t) {
  if constexpr (M == 2) {
    t[0] = d[0] - d[2];
    t[1] = d[1] + d[2];
    t[2] = d[2] - d[1];
    t[3] = d[1] - d[3];
  } else {
    t[0] = d[0] - 5.f * d[2] + 4.f * d[4];
    t[1] = 4.f * (d[3] + d[4]) - (d[1] + d[2]);
    t[2] = 4.f * (d[4] - d[3]) + (d[1] - d[2]);
    const float f = 2.f * (d[4] - d[2]), g = d[3] - d[1];
    t[3] = f + g;
    t[4] = f - g;
    t[5] = d[1] - 5.f * d[3] + 4.f * d[5];
  }
}

// o = A^T v: M values from alpha.
template <int M>
__device__ __forceinline__ void output_1d(const float* v, float* o) {
  if constexpr (M == 2) {
    o[0] = v[0] + v[1] + v[2];
    o[1] = v[1] - v[2] - v[3];
  } else {
    const float s12 = v[1] + v[2], d12 = v[1] - v[2];
    const float s34 = v[3] + v[4], d34 = v[3] - v[4];
    o[0] = v[0] + s12 + s34;
    o[1] = d12 + 0.5f * d34;
    o[2] = s12 + 0.25f * s34;
    o[3] = d12 + 0.125f * d34 + v[5];
  }
}

// Tile t of the batch: its image and the top-left output (= input patch origin + pads).
struct TileAt {
  int img, oy0, ox0;
};
__device__ __forceinline__ TileAt tile_at(int t, const WinoParams& p, int m) {
  const int img = t / p.tiles_per_image;
  const int r = t - img * p.tiles_per_image;
  const int ty = r / p.tiles_w;
  return {img, ty * m, (r - ty * p.tiles_w) * m};
}

template <class T, int M>
__global__ void __launch_bounds__(kTransformThreads)
    wino_input_kernel(const T* __restrict__ x, float* __restrict__ v, WinoParams p) {
  constexpr int A = M + 2;
  const int t = blockIdx.x * kTransformThreads + threadIdx.x;
  if (t >= p.tiles) return;
  const TileAt at = tile_at(t, p, M);
  const int iy0 = at.oy0 - p.ph, ix0 = at.ox0 - p.pw;
  const int64_t stride = static_cast<int64_t>(p.c) * p.tiles;  // between xi planes of V
  for (int c = blockIdx.y; c < p.c; c += gridDim.y) {
    const T* plane = x + (static_cast<int64_t>(at.img) * p.c + c) * p.h * p.w;
    float d[A][A];
#pragma unroll
    for (int i = 0; i < A; ++i) {
      const int iy = iy0 + i;
      const bool row_in = static_cast<unsigned>(iy) < static_cast<unsigned>(p.h);
#pragma unroll
      for (int j = 0; j < A; ++j) {
        const int ix = ix0 + j;
        d[i][j] = row_in && static_cast<unsigned>(ix) < static_cast<unsigned>(p.w)
                      ? ld(plane + iy * p.w + ix)
                      : 0.f;
      }
    }
    // Columns, then rows: V = B^T d B.
    float tmp[A][A];
#pragma unroll
    for (int j = 0; j < A; ++j) {
      float col[A], out[A];
#pragma unroll
      for (int i = 0; i < A; ++i) col[i] = d[i][j];
      input_1d<M>(col, out);
#pragma unroll
      for (int i = 0; i < A; ++i) tmp[i][j] = out[i];
    }
    float* vt = v + static_cast<int64_t>(c) * p.tiles + t;
#pragma unroll
    for (int i = 0; i < A; ++i) {
      float out[A];
      input_1d<M>(tmp[i], out);
#pragma unroll
      for (int j = 0; j < A; ++j) vt[(i * A + j) * stride] = out[j];
    }
  }
}

// B[kk][col] = V[xi][kk][col] (zero past C or T).
struct WinoB {
  const float* v;  // V[xi][0][col]
  bool valid;
  int c, tiles;
  __device__ __forceinline__ float operator()(int kk) const {
    return valid && kk < c ? __ldg(v + static_cast<int64_t>(kk) * tiles) : 0.f;
  }
};

template <int BM, int BN, int BK>
__global__ void __launch_bounds__(256)
    wino_gemm_kernel(const float* __restrict__ ut, const float* __restrict__ v,
                     float* __restrict__ mo, WinoParams p) {
  constexpr int kTM = BM / 16, kTN = BN / 16;
  const int xi = blockIdx.z;
  const int m0 = blockIdx.y * BM, n0 = blockIdx.x * BN;
  const int tid = threadIdx.x;
  const int col = n0 + tid % BN;
  const bool valid = col < p.tiles;
  const WinoB fetch{v + static_cast<int64_t>(xi) * p.c * p.tiles + (valid ? col : 0), valid, p.c,
                    p.tiles};
  float acc[kTM][kTN];
#pragma unroll
  for (int i = 0; i < kTM; ++i)
#pragma unroll
    for (int j = 0; j < kTN; ++j) acc[i][j] = 0.f;
  detail::sgemm_mainloop<BM, BN, BK>(ut + static_cast<int64_t>(xi) * p.cp * p.kp + m0, p.kp, p.cp,
                                     fetch, acc);
  const int tx = tid % 16, ty = tid / 16;
  float* mx = mo + static_cast<int64_t>(xi) * p.k * p.tiles;
#pragma unroll
  for (int i = 0; i < kTM; ++i) {
    const int k = m0 + ty + 16 * i;
    if (k >= p.k) continue;
#pragma unroll
    for (int j = 0; j < kTN; ++j) {
      const int t = n0 + tx + 16 * j;
      if (t < p.tiles) mx[static_cast<int64_t>(k) * p.tiles + t] = acc[i][j];
    }
  }
}

template <class T, int M>
__global__ void __launch_bounds__(kTransformThreads)
    wino_output_kernel(const float* __restrict__ mo, T* __restrict__ y, WinoParams p,
                       EpilogueArgs e) {
  constexpr int A = M + 2;
  const int t = blockIdx.x * kTransformThreads + threadIdx.x;
  if (t >= p.tiles) return;
  const TileAt at = tile_at(t, p, M);
  const int64_t stride = static_cast<int64_t>(p.k) * p.tiles;  // between xi planes of M
  for (int k = blockIdx.y; k < p.k; k += gridDim.y) {
    const float* mt = mo + static_cast<int64_t>(k) * p.tiles + t;
    // Columns, then rows: Y = A^T M A.
    float tmp[M][A];
#pragma unroll
    for (int j = 0; j < A; ++j) {
      float col[A], out[M];
#pragma unroll
      for (int i = 0; i < A; ++i) col[i] = __ldg(mt + (i * A + j) * stride);
      output_1d<M>(col, out);
#pragma unroll
      for (int i = 0; i < M; ++i) tmp[i][j] = out[i];
    }
    const int64_t plane = (static_cast<int64_t>(at.img) * p.k + k) * p.oh;
#pragma unroll
    for (int i = 0; i < M; ++i) {
      float out[M];
      output_1d<M>(tmp[i], out);
      const int oy = at.oy0 + i;
      if (oy >= p.oh) break;
#pragma unroll
      for (int j = 0; j < M; ++j) {
        const int ox = at.ox0 + j;
        if (ox >= p.ow) break;
        const int64_t index = (plane + oy) * p.ow + ox;
        y[index] = narrow<T>(finish<T>(out[j], k, index, e));
      }
    }
  }
}

using GemmFn = void (*)(const float*, const float*, float*, const WinoParams&, dim3, cudaStream_t);

template <int BM, int BN, int BK>
void launch_gemm(const float* ut, const float* v, float* mo, const WinoParams& p, dim3 grid,
                 cudaStream_t stream) {
  wino_gemm_kernel<BM, BN, BK><<<grid, 256, 0, stream>>>(ut, v, mo, p);
}

GemmFn pick_gemm(int64_t bm, int64_t bn, int64_t bk) {
#define DLAS_WINO_GEMM_TILE(BM, BN, BK) \
  if (bm == BM && bn == BN && bk == BK) return &launch_gemm<BM, BN, BK>;
  DLAS_CUDA_FOR_EACH_SGEMM_TILE(DLAS_WINO_GEMM_TILE)
#undef DLAS_WINO_GEMM_TILE
  fail(ErrorKind::kInternal, "cuda winograd conv: no GEMM kernel for tile ", bm, "x", bn, "x", bk);
}

class WinogradConvKernel final : public ConvKernel {
 public:
  WinogradConvKernel(const ConvShape& s, const Knobs& knobs, const float* weights)
      : storage_(s.storage), m_(static_cast<int>(knobs.at("variant"))) {
    const int64_t bm = knobs.at("bm"), bn = knobs.at("bn"), bk = knobs.at("bk");
    const int64_t alpha = m_ + 2, a2 = alpha * alpha;
    const int64_t cp = round_up(s.c, bk), kp = round_up(s.k, bm);
    // U[xi][k][c] -> Ut[xi][c][k], zero-padded to [a2][cp][kp].
    const std::vector<float> u = winograd_detail::transform_weights(weights, s.k, s.c, m_);
    std::vector<float> ut(static_cast<size_t>(a2 * cp * kp), 0.f);
    for (int64_t xi = 0; xi < a2; ++xi)
      for (int64_t k = 0; k < s.k; ++k)
        for (int64_t c = 0; c < s.c; ++c)
          ut[static_cast<size_t>((xi * cp + c) * kp + k)] =
              u[static_cast<size_t>((xi * s.k + k) * s.c + c)];
    weights_ = upload_floats(ut.data(), ut.size(), "cuda winograd conv weights");

    WinoParams& p = p_;
    p.c = static_cast<int>(s.c);
    p.k = static_cast<int>(s.k);
    p.h = static_cast<int>(s.h);
    p.w = static_cast<int>(s.w);
    p.oh = static_cast<int>(s.oh);
    p.ow = static_cast<int>(s.ow);
    p.ph = static_cast<int>(s.pad_h);
    p.pw = static_cast<int>(s.pad_w);
    const int64_t th = ceil_div(s.oh, m_), tw = ceil_div(s.ow, m_);
    p.tiles_h = static_cast<int>(th);
    p.tiles_w = static_cast<int>(tw);
    p.tiles_per_image = static_cast<int>(th * tw);
    p.tiles = static_cast<int>(s.n * th * tw);
    p.cp = static_cast<int>(cp);
    p.kp = static_cast<int>(kp);

    const int64_t tiles = s.n * th * tw;
    v_floats_ = a2 * s.c * tiles;
    m_floats_ = a2 * s.k * tiles;
    const unsigned tile_blocks = static_cast<unsigned>(ceil_div(tiles, kTransformThreads));
    in_grid_ = dim3(tile_blocks, static_cast<unsigned>(std::min<int64_t>(s.c, 65535)));
    gemm_grid_ = dim3(static_cast<unsigned>(ceil_div(tiles, bn)),
                      static_cast<unsigned>(ceil_div(s.k, bm)), static_cast<unsigned>(a2));
    out_grid_ = dim3(tile_blocks, static_cast<unsigned>(std::min<int64_t>(s.k, 65535)));
    gemm_ = pick_gemm(bm, bn, bk);
  }

  size_t workspace_bytes() const override {
    return static_cast<size_t>(m_offset() + m_floats_) * sizeof(float);
  }
  size_t weight_bytes() const override { return weights_.bytes(); }

  void run(const float* x, float* y, void* workspace, const Epilogue& epilogue,
           cudaStream_t stream) const override {
    switch (storage_) {
      case Storage::kF16:
        return run_as(reinterpret_cast<const __half*>(x), reinterpret_cast<__half*>(y), workspace,
                      epilogue, stream);
      case Storage::kBF16:
        return run_as(reinterpret_cast<const __nv_bfloat16*>(x),
                      reinterpret_cast<__nv_bfloat16*>(y), workspace, epilogue, stream);
      default:
        return run_as(x, y, workspace, epilogue, stream);
    }
  }

 private:
  template <class T>
  void run_as(const T* x, T* y, void* workspace, const Epilogue& epilogue,
              cudaStream_t stream) const {
    float* v = static_cast<float*>(workspace);
    float* mo = v + m_offset();
    if (m_ == 2)
      wino_input_kernel<T, 2><<<in_grid_, kTransformThreads, 0, stream>>>(x, v, p_);
    else
      wino_input_kernel<T, 4><<<in_grid_, kTransformThreads, 0, stream>>>(x, v, p_);
    check_launch("cuda winograd conv input transform");
    gemm_(weights_.as<float>(), v, mo, p_, gemm_grid_, stream);
    check_launch("cuda winograd conv GEMM");
    const EpilogueArgs e = epilogue_args(epilogue);
    if (m_ == 2)
      wino_output_kernel<T, 2><<<out_grid_, kTransformThreads, 0, stream>>>(mo, y, p_, e);
    else
      wino_output_kernel<T, 4><<<out_grid_, kTransformThreads, 0, stream>>>(mo, y, p_, e);
    check_launch("cuda winograd conv output transform");
  }

  // M starts 256-byte aligned after V.
  int64_t m_offset() const { return round_up(v_floats_, 64); }

  Storage storage_;
  int m_;
  DeviceBuffer weights_;
  WinoParams p_{};
  int64_t v_floats_ = 0, m_floats_ = 0;
  dim3 in_grid_, gemm_grid_, out_grid_;
  GemmFn gemm_ = nullptr;
};

bool supports(const ConvShape& s) {
  if (!detail::shape_ok_any_storage(s)) return false;
  if (s.kh != 3 || s.kw != 3 || s.stride_h != 1 || s.stride_w != 1 || s.dil_h != 1 ||
      s.dil_w != 1 || s.groups != 1)
    return false;
  // GEMM grid.y = K tiles within 65535; the tile count (F(2x2), the larger) and every
  // workspace plane's flat index within int32 where the kernels keep it so.
  const int64_t tiles = s.n * ceil_div(s.oh, 2) * ceil_div(s.ow, 2);
  return ceil_div(s.k, 32) <= 65535 && tiles <= detail::kInt32Max / 2 &&
         s.c * tiles <= detail::kInt32Max && s.k * tiles <= detail::kInt32Max;
}

KnobSpace knob_space(const ConvShape&) {
  KnobSpace space;
  space.knobs.push_back({"variant", {2, 4}, "output tile m of F(m x m, 3 x 3)"});
  space.knobs.push_back({"bm", {32, 64, 128}, "output channels per GEMM block tile"});
  space.knobs.push_back({"bn", {32, 64, 128}, "tiles per GEMM block tile"});
  space.knobs.push_back({"bk", {8, 16}, "input channels per shared-memory slice"});
  return space;
}

// Untuned: F(2x2) (the more accurate), the GEMM tile by size, depth 16 (as gemm's).
Knobs default_knobs(const ConvShape& s) {
  const int64_t tiles = s.n * ceil_div(s.oh, 2) * ceil_div(s.ow, 2);
  int64_t bm = 32, bn = 32;
  detail::default_gemm_tile(s.k, tiles, 16, bm, bn);
  return {{"variant", 2}, {"bm", bm}, {"bn", bn}, {"bk", 16}};
}

}  // namespace

const ConvAlgorithm& winograd_cuda_conv_algorithm() {
  static const ConvAlgorithm algo{
      "winograd",
      "Winograd F(2x2,3x3) / F(4x4,3x3): transforms + batched GEMMs, dense 3x3 stride 1",
      &supports,
      &knob_space,
      &default_knobs,
      &detail::checked_prepare<WinogradConvKernel, winograd_cuda_conv_algorithm>,
  };
  return algo;
}

}  // namespace dlas::cuda

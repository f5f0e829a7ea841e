// sparse: the CUDA convolution of weight-pruned layers (cuda_conv.h), CSR weights. At
// prepare, each output channel's nonzero weights become one CSR row: the value and the tap
// it multiplies, packed as (input channel within the group, kernel row, kernel column).
// A thread computes one output pixel for `kt` consecutive output channels of one group,
// walking only their nonzeros; neighbouring threads take neighbouring pixels, so for each
// nonzero a warp reads a run of one input row (coalesced at stride 1) while the nonzero
// itself is the same for the whole warp (a broadcast load). Work scales with the nonzeros,
// not the dense MACs. grid = (pixel blocks over n*oh*ow, groups x channel blocks).
#include <cuda_runtime.h>

#include <algorithm>
#include <memory>
#include <vector>

#include "algo/cuda/conv_common.h"
#include "algo/cuda/epilogue.cuh"
#include "dlas/algo/cuda_conv.h"
#include "dlas/core/error.h"

namespace dlas::cuda {
namespace {

using detail::ceil_div;

struct SparseParams {
  int c, h, w, k, oh, ow;
  int sh, sw, ph, pw, dh, dw;
  int cg, kg;   // input and output channels per group
  int kblocks;  // channel blocks of kt per group
  int pixels;   // n * oh * ow
};

// The tap of one nonzero: input channel within the group (16 bits), kernel row and column
// (8 bits each).
__host__ __device__ inline unsigned pack_tap(unsigned ci, unsigned r, unsigned s) {
  return (ci << 16) | (r << 8) | s;
}

template <int KT, int THREADS>
__global__ void __launch_bounds__(THREADS)
    sparse_conv_kernel(const float* __restrict__ x, const int* __restrict__ row_ptr,
                       const unsigned* __restrict__ taps, const float* __restrict__ values,
                       float* __restrict__ y, SparseParams p, EpilogueArgs e) {
  const int pixel = blockIdx.x * THREADS + threadIdx.x;
  const int group = blockIdx.y / p.kblocks;
  const int k0 = group * p.kg + (blockIdx.y % p.kblocks) * KT;
  if (pixel >= p.pixels) return;
  const int plane = p.oh * p.ow;
  const int img = pixel / plane;
  const int q = pixel - img * plane;
  const int oy = q / p.ow, ox = q - oy * p.ow;
  const int iy0 = oy * p.sh - p.ph, ix0 = ox * p.sw - p.pw;
  const float* xg =
      x + (static_cast<int64_t>(img) * p.c + static_cast<int64_t>(group) * p.cg) * p.h * p.w;
  const int kend = min(k0 + KT, (group + 1) * p.kg);
#pragma unroll
  for (int j = 0; j < KT; ++j) {
    const int k = k0 + j;
    if (k >= kend) break;
    float acc = 0.f;
    const int end = __ldg(row_ptr + k + 1);
    for (int i = __ldg(row_ptr + k); i < end; ++i) {
      const unsigned t = __ldg(taps + i);
      const int ci = static_cast<int>(t >> 16), r = static_cast<int>((t >> 8) & 255u),
                s = static_cast<int>(t & 255u);
      const int iy = iy0 + r * p.dh, ix = ix0 + s * p.dw;
      if (static_cast<unsigned>(iy) < static_cast<unsigned>(p.h) &&
          static_cast<unsigned>(ix) < static_cast<unsigned>(p.w))
        acc = fmaf(__ldg(values + i), __ldg(xg + (static_cast<int64_t>(ci) * p.h + iy) * p.w + ix),
                   acc);
    }
    const int64_t index = (static_cast<int64_t>(img) * p.k + k) * plane + q;
    y[index] = finish(acc, k, index, e);
  }
}

using LaunchFn = void (*)(const float*, const int*, const unsigned*, const float*, float*,
                          const SparseParams&, const EpilogueArgs&, dim3, cudaStream_t);

template <int KT, int THREADS>
void launch(const float* x, const int* row_ptr, const unsigned* taps, const float* values, float* y,
            const SparseParams& p, const EpilogueArgs& e, dim3 grid, cudaStream_t stream) {
  sparse_conv_kernel<KT, THREADS><<<grid, THREADS, 0, stream>>>(x, row_ptr, taps, values, y, p, e);
}

LaunchFn pick_launch(int64_t kt, int64_t threads) {
  return with_int<1, 2, 4, 8>(kt, [&](auto KT) {
    return with_int<64, 128, 256>(threads, [&](auto TH) -> LaunchFn { return &launch<KT, TH>; });
  });
}

class SparseConvKernel final : public ConvKernel {
 public:
  SparseConvKernel(const ConvShape& s, const Knobs& knobs, const float* weights) {
    const int64_t kt = knobs.at("kt"), threads = knobs.at("threads");
    const int64_t cg = s.c / s.groups, kg = s.k / s.groups, taps = cg * s.kh * s.kw;
    std::vector<int> row_ptr(static_cast<size_t>(s.k + 1), 0);
    std::vector<unsigned> tap;
    std::vector<float> value;
    for (int64_t k = 0; k < s.k; ++k) {
      const float* wk = weights + k * taps;
      for (int64_t ci = 0; ci < cg; ++ci)
        for (int64_t r = 0; r < s.kh; ++r)
          for (int64_t c = 0; c < s.kw; ++c) {
            const float v = wk[(ci * s.kh + r) * s.kw + c];
            if (v == 0.f) continue;
            tap.push_back(pack_tap(static_cast<unsigned>(ci), static_cast<unsigned>(r),
                                   static_cast<unsigned>(c)));
            value.push_back(v);
          }
      row_ptr[static_cast<size_t>(k + 1)] = static_cast<int>(value.size());
    }
    nonzeros_ = static_cast<int64_t>(value.size());
    row_ptr_ = DeviceBuffer(row_ptr.size() * sizeof(int), "cuda sparse conv rows");
    row_ptr_.upload(row_ptr.data(), row_ptr.size() * sizeof(int));
    if (!value.empty()) {
      taps_ = DeviceBuffer(tap.size() * sizeof(unsigned), "cuda sparse conv taps");
      taps_.upload(tap.data(), tap.size() * sizeof(unsigned));
      values_ = upload_floats(value.data(), value.size(), "cuda sparse conv weights");
    }
    SparseParams& p = p_;
    p.c = static_cast<int>(s.c);
    p.h = static_cast<int>(s.h);
    p.w = static_cast<int>(s.w);
    p.k = static_cast<int>(s.k);
    p.oh = static_cast<int>(s.oh);
    p.ow = static_cast<int>(s.ow);
    p.sh = static_cast<int>(s.stride_h);
    p.sw = static_cast<int>(s.stride_w);
    p.ph = static_cast<int>(s.pad_h);
    p.pw = static_cast<int>(s.pad_w);
    p.dh = static_cast<int>(s.dil_h);
    p.dw = static_cast<int>(s.dil_w);
    p.cg = static_cast<int>(cg);
    p.kg = static_cast<int>(kg);
    p.kblocks = static_cast<int>(ceil_div(kg, kt));
    p.pixels = static_cast<int>(s.n * s.oh * s.ow);
    grid_ = dim3(static_cast<unsigned>(ceil_div(p.pixels, threads)),
                 static_cast<unsigned>(s.groups * p.kblocks));
    launch_ = pick_launch(kt, threads);
  }

  size_t workspace_bytes() const override { return 0; }
  size_t weight_bytes() const override {
    return row_ptr_.bytes() + taps_.bytes() + values_.bytes();
  }

  void run(const float* x, float* y, void*, const Epilogue& epilogue,
           cudaStream_t stream) const override {
    launch_(x, row_ptr_.as<int>(), taps_.as<unsigned>(), values_.as<float>(), y, p_,
            epilogue_args(epilogue), grid_, stream);
    check_launch("cuda sparse conv");
  }

 private:
  DeviceBuffer row_ptr_, taps_, values_;
  int64_t nonzeros_ = 0;
  SparseParams p_{};
  dim3 grid_;
  LaunchFn launch_ = nullptr;
};

bool supports(const ConvShape& s) {
  if (!detail::shape_ok(s)) return false;
  // The packed tap: 16 bits of input channel, 8 of kernel row and column; grid.y 65535
  // (with the largest kt, 8, the fewest channel blocks: the other kt are checked in
  // knob_space); the CSR row pointers are int.
  return s.c / s.groups < 65536 && s.kh < 256 && s.kw < 256 &&
         s.k * (s.c / s.groups) * s.kh * s.kw <= detail::kInt32Max &&
         s.groups * ceil_div(s.k / s.groups, 8) <= 65535 &&
         s.n * s.oh * s.ow <= detail::kInt32Max / 2;
}

KnobSpace knob_space(const ConvShape& s) {
  KnobSpace space;
  std::vector<int64_t> kts;
  for (int64_t kt : {1, 2, 4, 8})
    if (s.groups * ceil_div(s.k / s.groups, kt) <= 65535) kts.push_back(kt);
  space.knobs.push_back({"kt", kts, "output channels per thread (one pixel each)"});
  space.knobs.push_back({"threads", {64, 128, 256}, "threads (pixels) per block"});
  return space;
}

// Untuned (no measurement yet): 4 channels per thread where the grid keeps two blocks per
// nominal SM, fewer otherwise; 128 threads.
Knobs default_knobs(const ConvShape& s) {
  const KnobSpace space = knob_space(s);
  int64_t kt = 1;
  for (int64_t v : space.knobs[0].values)
    if (v <= 4 && ceil_div(s.n * s.oh * s.ow, 128) * s.groups * ceil_div(s.k / s.groups, v) >=
                      2 * detail::kNominalSms)
      kt = v;
  if (std::find(space.knobs[0].values.begin(), space.knobs[0].values.end(), kt) ==
      space.knobs[0].values.end())
    kt = space.knobs[0].values.back();
  return {{"kt", kt}, {"threads", 128}};
}

}  // namespace

const ConvAlgorithm& sparse_cuda_conv_algorithm() {
  static const ConvAlgorithm algo{
      "sparse",
      "CSR weights (weight-pruned layers): each thread one pixel of kt output channels, "
      "walking their nonzeros only",
      &supports,
      &knob_space,
      &default_knobs,
      &detail::checked_prepare<SparseConvKernel, sparse_cuda_conv_algorithm>,
  };
  return algo;
}

}  // namespace dlas::cuda

// Measured GPU peaks (gpu.h, `dlas hw --peak`): fp32 and half2 FMA chains over one full
// wave of resident blocks, a large fp16-in/fp32-accumulate cuBLAS GEMM for the tensor cores,
// and a float4 copy kernel over buffers far larger than L2. Each probe is timed with CUDA
// events, grown to about kTargetSeconds a run, and reported as the best of kRuns runs.
#include <cublas_v2.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <limits>

#include "dlas/core/error.h"
#include "dlas/hw/gpu.h"

namespace dlas {

namespace {

constexpr int kRuns = 5;
constexpr double kTargetSeconds = 0.03;
constexpr int kChains = 8;  // independent FMA chains per thread
constexpr int kBlock = 256;

// a = a * b + c in kChains independent chains. b and c are kernel arguments and the result
// is stored when it equals one value it never takes, so nothing can be folded away.
__global__ void __launch_bounds__(kBlock) fma_f32_kernel(float* sink, int iters, float b, float c) {
  const float seed = 1e-3f * static_cast<float>(threadIdx.x + blockIdx.x);
  float a[kChains];
#pragma unroll
  for (int i = 0; i < kChains; ++i) a[i] = seed + static_cast<float>(i);
#pragma unroll 16
  for (int it = 0; it < iters; ++it) {
#pragma unroll
    for (int i = 0; i < kChains; ++i) a[i] = fmaf(a[i], b, c);
  }
  float s = 0;
#pragma unroll
  for (int i = 0; i < kChains; ++i) s += a[i];
  if (s == -1234.5f) sink[0] = s;
}

// The same with half2 FMAs (two fp16 lanes, four operations each). On Hopper plain HFMA2
// issues at the FFMA rate (66.9 TFLOP/s on an H200, with 4 to 32 chains per thread); the
// datasheet's doubled fp16 figure also counts the tensor pipe (HFMA2.MMA).
__global__ void __launch_bounds__(kBlock)
    fma_f16_kernel(float* sink, int iters, float bf, float cf) {
  const __half2 b = __float2half2_rn(bf), c = __float2half2_rn(cf);
  const float seed = 1e-3f * static_cast<float>(threadIdx.x + blockIdx.x);
  __half2 a[kChains];
#pragma unroll
  for (int i = 0; i < kChains; ++i)
    a[i] = __floats2half2_rn(seed + 0.25f * static_cast<float>(i),
                             seed - 0.25f * static_cast<float>(i));
#pragma unroll 16
  for (int it = 0; it < iters; ++it) {
#pragma unroll
    for (int i = 0; i < kChains; ++i) a[i] = __hfma2(a[i], b, c);
  }
  float s = 0;
#pragma unroll
  for (int i = 0; i < kChains; ++i) s += __low2float(a[i]) + __high2float(a[i]);
  if (s == -1234.5f) sink[0] = s;
}

__global__ void copy_kernel(const float4* __restrict__ src, float4* __restrict__ dst, size_t n) {
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  for (size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride)
    dst[i] = src[i];
}

// Pseudo-random fp16 values in [-0.5, 0.5): GEMM operands that switch like real data.
__global__ void fill_half_kernel(__half* p, size_t n, uint32_t seed) {
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  for (size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    uint32_t h = static_cast<uint32_t>(i) * 2654435761u ^ seed;
    h ^= h >> 15;
    h *= 2246822519u;
    h ^= h >> 13;
    p[i] = __float2half(static_cast<float>(h & 0xffff) * (1.f / 65536.f) - 0.5f);
  }
}

void check_launch(const char* what) { check_cuda(cudaGetLastError(), what); }

void check_cublas(cublasStatus_t s, const char* what) {
  if (s != CUBLAS_STATUS_SUCCESS) fail(ErrorKind::kRuntime, what, ": ", cublasGetStatusString(s));
}

// Makes `index` the current device and restores the previous one.
class DeviceScope {
 public:
  explicit DeviceScope(int index) {
    if (cudaGetDevice(&prev_) != cudaSuccess) {
      cudaGetLastError();
      prev_ = -1;
    }
    check_cuda(cudaSetDevice(index), "cudaSetDevice");
  }
  ~DeviceScope() {
    if (prev_ >= 0) cudaSetDevice(prev_);
  }
  DeviceScope(const DeviceScope&) = delete;
  DeviceScope& operator=(const DeviceScope&) = delete;

 private:
  int prev_ = -1;
};

class Timer {
 public:
  Timer() {
    check_cuda(cudaEventCreate(&start_), "cudaEventCreate");
    const cudaError_t err = cudaEventCreate(&stop_);
    if (err != cudaSuccess) {
      cudaEventDestroy(start_);
      check_cuda(err, "cudaEventCreate");
    }
  }
  ~Timer() {
    cudaEventDestroy(start_);
    cudaEventDestroy(stop_);
  }
  Timer(const Timer&) = delete;
  Timer& operator=(const Timer&) = delete;

  // Seconds the work `enqueue` puts on the default stream takes on the device.
  template <class F>
  double seconds(F&& enqueue) {
    check_cuda(cudaEventRecord(start_), "cudaEventRecord");
    enqueue();
    check_cuda(cudaEventRecord(stop_), "cudaEventRecord");
    check_cuda(cudaEventSynchronize(stop_), "GPU peak probe");
    float ms = 0;
    check_cuda(cudaEventElapsedTime(&ms, start_, stop_), "cudaEventElapsedTime");
    return ms * 1e-3;
  }

  // Device seconds per unit of `run(units)` (work proportional to units): after a warm-up,
  // units grow until one run takes about kTargetSeconds; the best of kRuns runs.
  template <class F>
  double best_per_unit(F&& run, int64_t units, int64_t max_units) {
    units = std::min(units, max_units);
    run(units);  // warm-up: module loading, clocks, cuBLAS's heuristics
    double t = seconds([&] { run(units); });
    while (t < kTargetSeconds / 16 && units < max_units) {
      units = std::min(units * 8, max_units);
      t = seconds([&] { run(units); });
    }
    units = std::clamp<int64_t>(static_cast<int64_t>(units * kTargetSeconds / std::max(t, 1e-9)), 1,
                                max_units);
    double best = std::numeric_limits<double>::infinity();
    for (int r = 0; r < kRuns; ++r) best = std::min(best, seconds([&] { run(units); }));
    return best / static_cast<double>(units);
  }

 private:
  cudaEvent_t start_ = nullptr, stop_ = nullptr;
};

template <class Kernel>
int full_wave_grid(Kernel kernel, int sm_count) {
  int per_sm = 0;
  check_cuda(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, kBlock, 0),
             "cudaOccupancyMaxActiveBlocksPerMultiprocessor");
  return std::max(1, per_sm) * sm_count;
}

// TFLOP/s of an FMA-chain kernel; `ops_per_fma` counts every lane's multiply and add. a
// converges to c / (1 - b): no overflow, no denormals.
template <class Kernel>
double fma_tflops(Timer& timer, Kernel kernel, int sm_count, float* sink, double ops_per_fma,
                  float b, float c, const char* what) {
  const int grid = full_wave_grid(kernel, sm_count);
  const double per_iter = timer.best_per_unit(
      [&](int64_t iters) {
        kernel<<<grid, kBlock>>>(sink, static_cast<int>(iters), b, c);
        check_launch(what);
      },
      4096, int64_t{1} << 30);
  return ops_per_fma * kChains * static_cast<double>(grid) * kBlock / per_iter * 1e-12;
}

// TFLOP/s of an n x n x n fp16-in, fp32-accumulate cuBLAS GEMM (the tensor cores).
double tensor_tflops(Timer& timer, size_t free_bytes) {
  int64_t n = 8192;
  while (n > 1024 && static_cast<size_t>(8 * n * n) > free_bytes / 2) n /= 2;
  const size_t nn = static_cast<size_t>(n * n);
  DeviceBuffer a(nn * sizeof(__half), "GPU peak GEMM A"), b(nn * sizeof(__half), "GPU peak GEMM B");
  DeviceBuffer c(nn * sizeof(float), "GPU peak GEMM C");
  fill_half_kernel<<<1024, kBlock>>>(a.as<__half>(), nn, 0x9e3779b9u);
  fill_half_kernel<<<1024, kBlock>>>(b.as<__half>(), nn, 0x85ebca6bu);
  check_launch("GPU peak GEMM fill");
  cublasHandle_t handle = nullptr;
  check_cublas(cublasCreate(&handle), "cublasCreate");
  struct Destroy {
    cublasHandle_t h;
    ~Destroy() { cublasDestroy(h); }
  } destroy{handle};
  const float alpha = 1, beta = 0;
  const int ni = static_cast<int>(n);
  const double per_gemm = timer.best_per_unit(
      [&](int64_t gemms) {
        for (int64_t g = 0; g < gemms; ++g)
          check_cublas(cublasGemmEx(handle, CUBLAS_OP_N, CUBLAS_OP_N, ni, ni, ni, &alpha, a.get(),
                                    CUDA_R_16F, ni, b.get(), CUDA_R_16F, ni, &beta, c.get(),
                                    CUDA_R_32F, ni, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
                       "cublasGemmEx (GPU peak)");
      },
      1, 1000);
  return 2.0 * static_cast<double>(n) * n * n / per_gemm * 1e-12;
}

// GB/s of a device-to-device copy kernel, counting the bytes read and written.
double copy_gbs(Timer& timer, const GpuInfo& g, size_t free_bytes) {
  size_t bytes = std::max<size_t>(size_t{1} << 30, 8 * static_cast<size_t>(g.l2_bytes));
  bytes = std::min(bytes, free_bytes / 4);  // two buffers, at most half of what is free
  bytes &= ~((size_t{1} << 20) - 1);
  DLAS_CHECK(bytes > 0, ErrorKind::kRuntime, "GPU peak: cuda:", g.index,
             " has too little free memory for the bandwidth probe");
  DeviceBuffer src(bytes, "GPU peak copy source"), dst(bytes, "GPU peak copy destination");
  check_cuda(cudaMemset(src.get(), 0, bytes), "cudaMemset");
  check_cuda(cudaMemset(dst.get(), 0, bytes), "cudaMemset");
  const int grid = full_wave_grid(copy_kernel, g.sm_count);
  const size_t n4 = bytes / sizeof(float4);
  const double per_copy = timer.best_per_unit(
      [&](int64_t copies) {
        for (int64_t i = 0; i < copies; ++i)
          copy_kernel<<<grid, kBlock>>>(src.as<const float4>(), dst.as<float4>(), n4);
        check_launch("GPU peak copy kernel");
      },
      1, 10000);
  return 2.0 * static_cast<double>(bytes) / per_copy * 1e-9;
}

}  // namespace

GpuPeak measure_gpu_peak(int index) {
  const std::vector<GpuInfo>& gpus = list_gpus();
  if (gpus.empty()) fail(ErrorKind::kUnsupported, "cuda:", index, ": ", gpu_unavailable_reason());
  const auto it =
      std::find_if(gpus.begin(), gpus.end(), [&](const GpuInfo& g) { return g.index == index; });
  DLAS_CHECK(it != gpus.end(), ErrorKind::kUnsupported, "cuda:", index, ": this machine has ",
             gpus.size(), " CUDA device", gpus.size() == 1 ? "" : "s");
  const GpuInfo& g = *it;
  const auto t0 = std::chrono::steady_clock::now();
  DeviceScope scope(index);
  Timer timer;
  DeviceBuffer sink(sizeof(float), "GPU peak sink");
  GpuPeak p;
  p.index = index;
  p.fp32_tflops = fma_tflops(timer, fma_f32_kernel, g.sm_count, sink.as<float>(), 2.0, 0.9999f,
                             1e-4f, "GPU peak fp32 kernel");
  p.fp16_tflops = fma_tflops(timer, fma_f16_kernel, g.sm_count, sink.as<float>(), 4.0, 0.999f,
                             1e-3f, "GPU peak fp16 kernel");
  size_t free_bytes = 0, total_bytes = 0;
  check_cuda(cudaMemGetInfo(&free_bytes, &total_bytes), "cudaMemGetInfo");
  p.tensor_fp16_tflops = tensor_tflops(timer, free_bytes);
  check_cuda(cudaMemGetInfo(&free_bytes, &total_bytes), "cudaMemGetInfo");
  p.copy_gbs = copy_gbs(timer, g, free_bytes);
  p.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return p;
}

}  // namespace dlas

// GPUs (DLAS layer 6): the CUDA devices this machine has, what they are, what they
// sustain, and the few device-memory primitives the GPU kernels and plans share.
//
// Built with the CUDA backend (DLAS_WITH_CUDA, docs/gpu.md) these query the CUDA runtime
// (linked statically: no libcudart to find); built without it, or on a machine without a
// driver or a device, list_gpus() is empty and gpu_unavailable_reason() says why in one
// line. Nothing here includes CUDA headers.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

// The CUDA runtime's stream handle, declared exactly as cuda_runtime_api.h does.
typedef struct CUstream_st* cudaStream_t;

namespace dlas {

struct GpuInfo {
  int index = 0;                   // the CUDA ordinal (--device cuda:N)
  std::string name;                // "NVIDIA H100 80GB HBM3"
  int sm_count = 0;                // streaming multiprocessors
  int cc_major = 0, cc_minor = 0;  // compute capability (9.0 for Hopper)
  int64_t memory_bytes = 0;        // global memory
  int64_t l2_bytes = 0;
  int64_t smem_per_block_optin = 0;  // the largest shared memory one block may opt in to
  int clock_khz = 0, memory_clock_khz = 0, memory_bus_bits = 0;  // 0 where unknown
  std::string driver, runtime;                                   // "13.0"
};

// Every CUDA device, in ordinal order; empty without CUDA, a driver or a device.
const std::vector<GpuInfo>& list_gpus();
// Why list_gpus() is empty, in one line ("this dlas was built without CUDA", "no CUDA driver
// on this machine (cudaGetDeviceCount: ...)"); empty when there are devices.
const std::string& gpu_unavailable_reason();
// True when this binary was built with the CUDA backend.
bool built_with_cuda();

// A device: "cpu" or "cuda[:N]". Returns the CUDA ordinal, or -1 for "cpu". Throws
// kInvalidInput for anything else, and kUnsupported (one line, with
// gpu_unavailable_reason()) when a CUDA device is asked for that this machine does not have.
int parse_device(const std::string& device);
// "cpu", "cuda:0": the canonical spelling (Variant::device).
std::string canonical_device(const std::string& device);

// Measured GPU peaks (`dlas hw --peak`), best of short runs of each probe:
// - fp32: FMA chains in every thread of a full grid; fp16: half2 FMA chains;
// - tensor cores: a large fp16-in/fp32-accumulate cuBLAS GEMM (what a GEMM can sustain);
// - bandwidth: a device-to-device copy kernel over buffers far larger than L2, counting
//   bytes read and written.
struct GpuPeak {
  int index = 0;
  double fp32_tflops = 0, fp16_tflops = 0, tensor_fp16_tflops = 0;
  double copy_gbs = 0;
  double seconds = 0;  // wall time the probes took
};
// Measures device `index` (kUnsupported without it).
GpuPeak measure_gpu_peak(int index);

// Throws kRuntime "<what>: <CUDA error string>" when `code` (a cudaError_t) is not success.
void check_cuda(int code, const char* what);

// Device memory owned by one object (cudaMalloc / cudaFree); never managed memory.
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  // Allocates `bytes` on the current device (kRuntime naming `what` when it fails).
  explicit DeviceBuffer(size_t bytes, const char* what = "device buffer");
  ~DeviceBuffer();
  DeviceBuffer(DeviceBuffer&& o) noexcept : ptr_(o.ptr_), bytes_(o.bytes_) {
    o.ptr_ = nullptr;
    o.bytes_ = 0;
  }
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  void* get() const { return ptr_; }
  template <class T>
  T* as() const {
    return static_cast<T*>(ptr_);
  }
  size_t bytes() const { return bytes_; }
  // Synchronous copies from / to host memory (prepare time, never the hot path).
  void upload(const void* host, size_t bytes);
  void download(void* host, size_t bytes) const;

 private:
  void* ptr_ = nullptr;
  size_t bytes_ = 0;
};

// Uploads `count` floats to a new device buffer.
DeviceBuffer upload_floats(const float* host, size_t count, const char* what = "weights");

}  // namespace dlas

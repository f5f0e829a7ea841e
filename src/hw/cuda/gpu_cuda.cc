// GPUs (gpu.h) with the CUDA backend: the devices the CUDA runtime reports, read once per
// process, why there are none (no driver, no device), and device memory (cudaMalloc). The
// runtime is linked statically, so on a machine without the driver cudaGetDeviceCount just
// fails and list_gpus() is empty.
#include <cuda_runtime.h>

#include <cstdlib>

#include "dlas/core/error.h"
#include "dlas/hw/gpu.h"

namespace dlas {

namespace {

// "13.0" from the runtime's 13000; empty for 0 (no driver).
std::string version_string(int v) {
  if (v <= 0) return "";
  return str(v / 1000, ".", (v % 1000) / 10);
}

int attribute(cudaDeviceAttr attr, int device) {
  int v = 0;
  if (cudaDeviceGetAttribute(&v, attr, device) != cudaSuccess) {
    cudaGetLastError();  // not sticky: clear it so that no later check reports it
    return 0;
  }
  return v;
}

struct GpuState {
  std::vector<GpuInfo> gpus;
  std::string reason;
};

GpuState detect() {
  GpuState s;
  int count = 0;
  const cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess) {
    cudaGetLastError();
    const std::string detail = str("cudaGetDeviceCount: ", cudaGetErrorString(err));
    if (err == cudaErrorInsufficientDriver)
      s.reason = str("no CUDA driver on this machine, or one too old for CUDA ",
                     version_string(CUDART_VERSION), " (", detail, ")");
    else if (err == cudaErrorNoDevice) {
      const char* visible = std::getenv("CUDA_VISIBLE_DEVICES");
      s.reason = visible ? str("no CUDA device visible (CUDA_VISIBLE_DEVICES='", visible, "'; ",
                               detail, ")")
                         : str("no CUDA device on this machine (", detail, ")");
    } else {
      s.reason = str("CUDA is unavailable on this machine (", detail, ")");
    }
    return s;
  }
  if (count <= 0) {
    s.reason = "no CUDA device on this machine";
    return s;
  }
  int driver = 0, runtime = 0;
  cudaDriverGetVersion(&driver);
  cudaRuntimeGetVersion(&runtime);
  for (int i = 0; i < count; ++i) {
    cudaDeviceProp p{};
    const cudaError_t perr = cudaGetDeviceProperties(&p, i);
    if (perr != cudaSuccess) {
      cudaGetLastError();
      s.gpus.clear();
      s.reason = str("cannot query CUDA device ", i,
                     " (cudaGetDeviceProperties: ", cudaGetErrorString(perr), ")");
      return s;
    }
    GpuInfo g;
    g.index = i;
    g.name = p.name;
    g.sm_count = p.multiProcessorCount;
    g.cc_major = p.major;
    g.cc_minor = p.minor;
    g.memory_bytes = static_cast<int64_t>(p.totalGlobalMem);
    g.l2_bytes = p.l2CacheSize;
    g.smem_per_block_optin = static_cast<int64_t>(p.sharedMemPerBlockOptin);
    // cudaDeviceProp lost its clock fields in CUDA 13: the attributes cover every version.
    g.clock_khz = attribute(cudaDevAttrClockRate, i);
    g.memory_clock_khz = attribute(cudaDevAttrMemoryClockRate, i);
    g.memory_bus_bits = attribute(cudaDevAttrGlobalMemoryBusWidth, i);
    g.driver = version_string(driver);
    g.runtime = version_string(runtime);
    s.gpus.push_back(std::move(g));
  }
  return s;
}

const GpuState& state() {
  static const GpuState s = detect();
  return s;
}

}  // namespace

const std::vector<GpuInfo>& list_gpus() { return state().gpus; }

const std::string& gpu_unavailable_reason() { return state().reason; }

void check_cuda(int code, const char* what) {
  if (code == cudaSuccess) return;
  cudaGetLastError();  // a non-sticky error is reported once, here
  fail(ErrorKind::kRuntime, what, ": ", cudaGetErrorString(static_cast<cudaError_t>(code)));
}

DeviceBuffer::DeviceBuffer(size_t bytes, const char* what) {
  if (bytes == 0) return;
  void* p = nullptr;
  const cudaError_t err = cudaMalloc(&p, bytes);
  if (err != cudaSuccess) {
    cudaGetLastError();
    fail(ErrorKind::kRuntime, what, ": cannot allocate ", bytes, " bytes of device memory (",
         cudaGetErrorString(err), ")");
  }
  ptr_ = p;
  bytes_ = bytes;
}

DeviceBuffer::~DeviceBuffer() {
  if (ptr_) cudaFree(ptr_);  // nothing to do about a failure in a destructor
}

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& o) noexcept {
  if (this != &o) {
    if (ptr_) cudaFree(ptr_);
    ptr_ = o.ptr_;
    bytes_ = o.bytes_;
    o.ptr_ = nullptr;
    o.bytes_ = 0;
  }
  return *this;
}

void DeviceBuffer::upload(const void* host, size_t bytes) {
  DLAS_CHECK(bytes <= bytes_, ErrorKind::kInternal, "device buffer upload of ", bytes,
             " bytes into ", bytes_);
  if (bytes == 0) return;
  check_cuda(cudaMemcpy(ptr_, host, bytes, cudaMemcpyHostToDevice), "cudaMemcpy to the device");
}

void DeviceBuffer::download(void* host, size_t bytes) const {
  DLAS_CHECK(bytes <= bytes_, ErrorKind::kInternal, "device buffer download of ", bytes,
             " bytes from ", bytes_);
  if (bytes == 0) return;
  check_cuda(cudaMemcpy(host, ptr_, bytes, cudaMemcpyDeviceToHost), "cudaMemcpy from the device");
}

DeviceBuffer upload_floats(const float* host, size_t count, const char* what) {
  DeviceBuffer b(count * sizeof(float), what);
  b.upload(host, count * sizeof(float));
  return b;
}

}  // namespace dlas

// GPUs (gpu.h): device spellings ("cpu", "cuda", "cuda:N"), which every build understands,
// and, in a build without the CUDA backend, the stand-ins for the rest of gpu.h: no devices,
// and every device operation fails with one line saying how to get them. With the backend
// (DLAS_WITH_CUDA) the rest lives in cuda/gpu_cuda.cc and cuda/gpu_peak.cu.
#include "dlas/hw/gpu.h"

#include <charconv>
#include <optional>
#include <string_view>

#include "dlas/core/error.h"

namespace dlas {

namespace {

// The CUDA ordinal of a well-spelled device (-1 for "cpu"); nullopt for anything else.
std::optional<int> spelled_ordinal(std::string_view d) {
  if (d == "cpu") return -1;
  if (d == "cuda") return 0;
  constexpr std::string_view kPrefix = "cuda:";
  if (d.substr(0, kPrefix.size()) != kPrefix) return std::nullopt;
  const std::string_view n = d.substr(kPrefix.size());
  // Digits only: no sign, no space, no trailing text.
  if (n.empty() || n.size() > 9 || n.find_first_not_of("0123456789") != std::string_view::npos)
    return std::nullopt;
  int v = 0;
  const auto [end, ec] = std::from_chars(n.data(), n.data() + n.size(), v);
  if (ec != std::errc() || end != n.data() + n.size()) return std::nullopt;
  return v;
}

int checked_ordinal(const std::string& device) {
  const std::optional<int> v = spelled_ordinal(device);
  DLAS_CHECK(v.has_value(), ErrorKind::kInvalidInput, "unknown device '", device,
             "' (expected cpu, cuda or cuda:N)");
  return *v;
}

}  // namespace

bool built_with_cuda() {
#ifdef DLAS_WITH_CUDA
  return true;
#else
  return false;
#endif
}

int parse_device(const std::string& device) {
  const int ordinal = checked_ordinal(device);
  if (ordinal < 0) return ordinal;
  const std::vector<GpuInfo>& gpus = list_gpus();
  if (gpus.empty())
    fail(ErrorKind::kUnsupported, "--device ", device, ": ", gpu_unavailable_reason());
  for (const GpuInfo& g : gpus)
    if (g.index == ordinal) return ordinal;
  std::string have;
  for (const GpuInfo& g : gpus) have += str(have.empty() ? "" : ", ", "cuda:", g.index);
  fail(ErrorKind::kUnsupported, "--device ", device, ": this machine has ", gpus.size(),
       " CUDA device", gpus.size() == 1 ? "" : "s", " (", have, ")");
}

std::string canonical_device(const std::string& device) {
  const int ordinal = checked_ordinal(device);
  return ordinal < 0 ? std::string("cpu") : str("cuda:", ordinal);
}

#ifndef DLAS_WITH_CUDA

namespace {

const char kNoCuda[] =
    "this dlas was built without CUDA (configure with -DDLAS_WITH_CUDA=ON where the CUDA "
    "toolkit is installed)";

[[noreturn]] void no_cuda() { fail(ErrorKind::kUnsupported, kNoCuda); }

}  // namespace

const std::vector<GpuInfo>& list_gpus() {
  static const std::vector<GpuInfo> none;
  return none;
}

const std::string& gpu_unavailable_reason() {
  static const std::string reason = kNoCuda;
  return reason;
}

GpuPeak measure_gpu_peak(int) { no_cuda(); }

void check_cuda(int code, const char* what) {
  if (code != 0) no_cuda();
}

DeviceBuffer::DeviceBuffer(size_t, const char*) { no_cuda(); }

// Nothing is ever allocated without CUDA: the pointer is always null.
DeviceBuffer::~DeviceBuffer() = default;

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& o) noexcept {
  if (this != &o) {
    ptr_ = o.ptr_;
    bytes_ = o.bytes_;
    o.ptr_ = nullptr;
    o.bytes_ = 0;
  }
  return *this;
}

void DeviceBuffer::upload(const void*, size_t) { no_cuda(); }

void DeviceBuffer::download(void*, size_t) const { no_cuda(); }

DeviceBuffer upload_floats(const float*, size_t, const char*) { no_cuda(); }

#endif  // !DLAS_WITH_CUDA

}  // namespace dlas

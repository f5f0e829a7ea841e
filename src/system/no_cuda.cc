// The CUDA backend's system-layer entry points in a build without it (DLAS_WITH_CUDA unset):
// each is one kUnsupported line saying why (dlas/hw/gpu.h gpu_unavailable_reason). With the
// backend, src/system/backends/cuda/ and src/system/tune/cuda/ define them.
#if !DLAS_WITH_CUDA
#include "dlas/core/error.h"
#include "dlas/hw/gpu.h"
#include "dlas/system/cuda_executor.h"
#include "dlas/system/cuda_profile.h"
#include "dlas/system/cuda_tune.h"

namespace dlas {

std::unique_ptr<Executor> make_cuda_executor(const Graph&, const Variant& variant,
                                             const ExecutorOptions&) {
  fail(ErrorKind::kUnsupported,
       variant.device == "cpu" ? "--backend " + variant.backend : "--device " + variant.device,
       ": ", gpu_unavailable_reason());
}

CudaCalibrateResult calibrate_cuda(int, int, std::function<void(int, int, const std::string&)>) {
  fail(ErrorKind::kUnsupported, "--device cuda: ", gpu_unavailable_reason());
}

namespace tune {

CudaTuneReport tune_cuda(const Graph&, const CudaTuneOptions&) {
  fail(ErrorKind::kUnsupported, "--device cuda: ", gpu_unavailable_reason());
}

std::string cuda_hardware_id(int) {
  fail(ErrorKind::kUnsupported, "--device cuda: ", gpu_unavailable_reason());
}

LayerChoices apply_cuda_records(const Graph&, int, int, const std::vector<Record>&, int*, int*) {
  fail(ErrorKind::kUnsupported, "--device cuda: ", gpu_unavailable_reason());
}

}  // namespace tune
}  // namespace dlas
#endif

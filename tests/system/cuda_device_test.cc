// The device dimension where no GPU is visible (CI): a CUDA variant is one clear error, never
// a crash, and the CPU rows are unchanged. tests/gpu/ checks the CUDA plan itself.
#include <gtest/gtest.h>

#include "dlas/core/error.h"
#include "dlas/hw/gpu.h"
#include "dlas/model/zoo.h"
#include "dlas/system/make_executor.h"
#include "optimize/cli_test_util.h"

namespace dlas {
namespace {

TEST(CudaDevice, VariantNamesTheDeviceOnlyOffTheCpu) {
  Variant v;
  v.model = "resnet18-cifar";
  const std::string cpu = v.str();
  EXPECT_EQ(cpu.find("device="), std::string::npos);
  v.device = "cuda:0";
  EXPECT_NE(v.str().find(";device=cuda:0"), std::string::npos);
  EXPECT_NE(v.hash(), Variant{.model = "resnet18-cifar"}.hash());
}

TEST(CudaDevice, WithoutAGpuACudaVariantIsOneUnsupportedError) {
  if (!list_gpus().empty()) GTEST_SKIP() << "a CUDA device is visible";
  const Graph g = build_zoo_model("resnet18-cifar");
  for (const char* backend : {"dlas", "cudnn"}) {
    Variant v;
    v.model = "resnet18-cifar";
    v.backend = backend;
    v.device = "cuda:0";
    try {
      make_executor(g, v);
      FAIL() << backend << " compiled without a GPU";
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::kUnsupported) << e.what();
      EXPECT_NE(std::string(e.what()).find(gpu_unavailable_reason()), std::string::npos)
          << e.what();
    }
  }
  Variant onednn;
  onednn.backend = "onednn";
  onednn.device = "cuda:0";
  EXPECT_THROW(make_executor(g, onednn), Error);
}

class CudaDeviceCli : public test::CliTest {};

TEST_F(CudaDeviceCli, DeviceFlagErrorsAreOneLineAndExitTwo) {
  if (!list_gpus().empty()) GTEST_SKIP() << "a CUDA device is visible";
  for (const char* args : {"bench resnet18-cifar --device cuda --repeat 1",
                           "bench resnet18-cifar --backend cudnn --repeat 1",
                           "bench resnet18-cifar --device gpu --repeat 1",
                           "bench resnet18-cifar --device cuda:x --repeat 1",
                           "tune resnet18-cifar --device cuda -o /dev/null",
                           "profile resnet18-cifar --backend cudnn --repeat 1"}) {
    const auto r = dlas(args);
    EXPECT_EQ(r.code, 2) << args << ": " << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << args << ": " << r.err;
  }
  const auto cpu = dlas("bench mobilenetv1-cifar --device cpu --repeat 1 --json");
  ASSERT_EQ(cpu.code, 0) << cpu.err;
  EXPECT_NE(cpu.out.find("\"device\": \"cpu\""), std::string::npos) << cpu.out;
  EXPECT_EQ(cpu.out.find("kernel_median_ms"), std::string::npos) << cpu.out;
}

}  // namespace
}  // namespace dlas

// The device dimension where no GPU is visible (CI): a CUDA variant is one clear error, never
// a crash, and the CPU rows are unchanged. tests/gpu/ checks the CUDA plan itself.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "dlas/core/error.h"
#include "dlas/hw/gpu.h"
#include "dlas/model/zoo.h"
#include "dlas/system/cuda_profile.h"
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

TEST(CudaDevice, ShapeClassesNameKindKernelStridePixelsAndChannels) {
  cuda::ConvShape s;
  s.c = 64, s.h = s.w = 56, s.k = 64, s.kh = s.kw = 3, s.pad_h = s.pad_w = 1, s.oh = s.ow = 56;
  EXPECT_EQ(cuda_shape_class(s), "dense-3x3-s1-p4k-k64");
  s.density = 0.1;
  EXPECT_EQ(cuda_shape_class(s), "sparse-3x3-s1-p4k-k64");
  s.density = 1;
  s.groups = 64;
  EXPECT_EQ(cuda_shape_class(s), "dw-3x3-s1-p4k");
  s.groups = 1, s.k = 512, s.stride_h = s.stride_w = 2, s.oh = s.ow = 7;
  EXPECT_EQ(cuda_shape_class(s), "dense-3x3-s2-p64-kbig");
}

TEST(CudaDevice, GpuProfileFilesRoundTripAndBadOnesAreRefusedOrIgnored) {
  CudaProfile p;
  p.gpu = "NVIDIA Test GPU|sm_90";
  p.classes["dense-1x1-s1-p1k-k256"] = {"gemm", {{"bm", 64}, {"bn", 32}, {"bk", 16}}, 3.5, "gemm",
                                        4.0,    "c64x32x32 k128 1x1 s1 p0 g1"};
  const auto dir = std::filesystem::temp_directory_path() / "dlas_gpu_profile_unit";
  std::filesystem::create_directories(dir);
  const std::string path = (dir / "p.json").string();
  p.save(path);
  const CudaProfile q = CudaProfile::load(path);
  ASSERT_EQ(q.classes.size(), 1u);
  EXPECT_EQ(q.classes.at("dense-1x1-s1-p1k-k256").knobs.at("bm"), 64);
  EXPECT_EQ(q.gpu, p.gpu);
  EXPECT_NE(active_cuda_profile(path, p.gpu), nullptr);
  EXPECT_EQ(active_cuda_profile(path, "Another GPU|sm_80"), nullptr);  // warned and ignored
  EXPECT_EQ(active_cuda_profile("none", p.gpu), nullptr);
  EXPECT_THROW(active_cuda_profile((dir / "missing.json").string(), p.gpu), Error);
  std::ofstream(dir / "bad.json") << "{\"format\": \"something else\"}";
  EXPECT_THROW(CudaProfile::load((dir / "bad.json").string()), Error);
  const std::string cache = default_cuda_profile_path(p.gpu);
  if (!cache.empty()) {
    EXPECT_NE(cache.find("gpu-profile-nvidia-test-gpu-sm-90.json"), std::string::npos) << cache;
  }
  std::filesystem::remove_all(dir);
}

class CudaDeviceCli : public test::CliTest {};

TEST_F(CudaDeviceCli, DeviceFlagErrorsAreOneLineAndExitTwo) {
  if (!list_gpus().empty()) GTEST_SKIP() << "a CUDA device is visible";
  for (const char* args :
       {"bench resnet18-cifar --device cuda --repeat 1",
        "bench resnet18-cifar --backend cudnn --repeat 1",
        "bench resnet18-cifar --device gpu --repeat 1",
        "bench resnet18-cifar --device cuda:x --repeat 1",
        "tune resnet18-cifar --device cuda -o /dev/null",
        "profile resnet18-cifar --backend cudnn --repeat 1", "hw --calibrate --device cuda"}) {
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

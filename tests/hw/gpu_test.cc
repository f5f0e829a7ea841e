// GPUs (gpu.h) on every machine, with or without CUDA, a driver or a device: device
// spellings, the one-line reasons when there is no GPU, and `dlas hw`'s GPU output.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "dlas/core/error.h"
#include "dlas/hw/gpu.h"

namespace dlas {
namespace {

namespace fs = std::filesystem;

// The kind of the dlas::Error that `f` throws (fails the test when it throws none).
template <class F>
ErrorKind thrown_kind(F&& f, const std::string& what) {
  try {
    f();
  } catch (const Error& e) {
    return e.kind();
  }
  ADD_FAILURE() << what << ": no dlas::Error";
  return ErrorKind::kInternal;
}

TEST(HwGpu, BuiltWithCudaMatchesTheBuild) {
#ifdef DLAS_WITH_CUDA
  EXPECT_TRUE(built_with_cuda());
#else
  EXPECT_FALSE(built_with_cuda());
  EXPECT_TRUE(list_gpus().empty());
  EXPECT_NE(gpu_unavailable_reason().find("built without CUDA"), std::string::npos)
      << gpu_unavailable_reason();
#endif
}

TEST(HwGpu, CanonicalDeviceNeedsNoGpu) {
  EXPECT_EQ(canonical_device("cpu"), "cpu");
  EXPECT_EQ(canonical_device("cuda"), "cuda:0");
  EXPECT_EQ(canonical_device("cuda:0"), "cuda:0");
  EXPECT_EQ(canonical_device("cuda:3"), "cuda:3");
  EXPECT_EQ(canonical_device("cuda:12"), "cuda:12");
  EXPECT_EQ(parse_device("cpu"), -1);
}

TEST(HwGpu, BadSpellingsAreInvalidInput) {
  for (const char* d : {"gpu", "cuda:-1", "cuda:x", "cuda:", "cuda:1x", "cuda: 1", "cuda:+1",
                        "CUDA", "Cpu", "cpu:0", "cuda0", "", "cuda:99999999999"}) {
    EXPECT_EQ(thrown_kind([&] { parse_device(d); }, d), ErrorKind::kInvalidInput) << d;
    EXPECT_EQ(thrown_kind([&] { canonical_device(d); }, d), ErrorKind::kInvalidInput) << d;
  }
  try {
    parse_device("gpu");
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), "unknown device 'gpu' (expected cpu, cuda or cuda:N)");
  }
}

TEST(HwGpu, MissingDevicesAreUnsupported) {
  const std::vector<GpuInfo>& gpus = list_gpus();
  // Far beyond any machine's device count.
  EXPECT_EQ(thrown_kind([] { parse_device("cuda:4096"); }, "cuda:4096"), ErrorKind::kUnsupported);
  EXPECT_EQ(thrown_kind([] { measure_gpu_peak(4096); }, "peak 4096"), ErrorKind::kUnsupported);
  if (!gpus.empty()) {
    EXPECT_TRUE(gpu_unavailable_reason().empty()) << gpu_unavailable_reason();
    EXPECT_EQ(parse_device("cuda"), 0);
    for (const GpuInfo& g : gpus) EXPECT_EQ(parse_device(str("cuda:", g.index)), g.index);
    return;
  }
  const std::string& reason = gpu_unavailable_reason();
  EXPECT_FALSE(reason.empty());
  EXPECT_EQ(reason.find('\n'), std::string::npos) << reason;
  for (const char* d : {"cuda", "cuda:0"}) {
    try {
      parse_device(d);
      ADD_FAILURE() << d << " parsed without a GPU";
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::kUnsupported) << d;
      EXPECT_NE(std::string(e.what()).find(reason), std::string::npos) << e.what();
      EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos) << e.what();
    }
  }
  EXPECT_EQ(thrown_kind([] { measure_gpu_peak(0); }, "peak 0"), ErrorKind::kUnsupported);
  // No device memory anywhere: kUnsupported without CUDA, kRuntime without a driver.
  thrown_kind([] { DeviceBuffer b(64); }, "DeviceBuffer(64)");
}

TEST(HwGpu, EmptyDeviceBuffersNeedNoGpu) {
  DeviceBuffer a;
  EXPECT_EQ(a.get(), nullptr);
  EXPECT_EQ(a.bytes(), 0u);
  DeviceBuffer b(std::move(a));
  a = std::move(b);
  EXPECT_EQ(a.get(), nullptr);
  EXPECT_EQ(b.get(), nullptr);
}

struct CliResult {
  int code;
  std::string out;
};

CliResult run_cli(const std::string& args) {
  const fs::path out =
      fs::temp_directory_path() / ("dlas_hw_gpu_" + std::to_string(::getpid()) + ".txt");
  const std::string cmd = std::string(DLAS_CLI_PATH) + " " + args + " >" + out.string();
  const int status = std::system(cmd.c_str());
  std::ifstream in(out);
  CliResult r{WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status),
              std::string(std::istreambuf_iterator<char>(in), {})};
  fs::remove(out);
  return r;
}

TEST(HwGpu, CliListsGpus) {
  const CliResult r = run_cli("hw --json");
  ASSERT_EQ(r.code, 0) << r.out;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  ASSERT_TRUE(j.contains("gpus")) << r.out;
  ASSERT_TRUE(j["gpus"].is_array());
  EXPECT_EQ(j["gpus"].size(), list_gpus().size());
  if (j["gpus"].empty()) {
    EXPECT_EQ(j.at("gpu_unavailable_reason").get<std::string>(), gpu_unavailable_reason());
  } else {
    EXPECT_FALSE(j.contains("gpu_unavailable_reason"));
    for (const nlohmann::json& g : j["gpus"]) {
      for (const char* key : {"index", "name", "sm_count", "compute_capability", "memory_bytes",
                              "l2_bytes", "driver", "runtime"})
        EXPECT_TRUE(g.contains(key)) << key;
      EXPECT_FALSE(g.contains("peak_fp32_tflops"));  // plain `hw` does not measure
    }
  }
  const CliResult text = run_cli("hw");
  ASSERT_EQ(text.code, 0) << text.out;
  if (list_gpus().empty())
    EXPECT_NE(text.out.find("GPUs: none (" + gpu_unavailable_reason() + ")"), std::string::npos)
        << text.out;
  else
    EXPECT_NE(text.out.find("\n  cuda:0 "), std::string::npos) << text.out;
}

}  // namespace
}  // namespace dlas

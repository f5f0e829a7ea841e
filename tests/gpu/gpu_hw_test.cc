// GPUs (gpu.h) on a machine with a CUDA device: what list_gpus() reports, device memory
// round trips, and the measured peaks (positive, never timing thresholds). Each test skips
// where no device is visible.
#include <gtest/gtest.h>

#include <cstring>
#include <numeric>
#include <vector>

#include "dlas/core/error.h"
#include "dlas/hw/gpu.h"

namespace dlas {
namespace {

TEST(GpuHw, ListsSaneDevices) {
  if (dlas::list_gpus().empty()) GTEST_SKIP() << dlas::gpu_unavailable_reason();
  EXPECT_TRUE(built_with_cuda());
  EXPECT_TRUE(gpu_unavailable_reason().empty());
  int expected = 0;
  for (const GpuInfo& g : list_gpus()) {
    EXPECT_EQ(g.index, expected++);
    EXPECT_FALSE(g.name.empty());
    EXPECT_GT(g.sm_count, 0) << g.name;
    EXPECT_GT(g.memory_bytes, 0) << g.name;
    EXPECT_GT(g.l2_bytes, 0) << g.name;
    EXPECT_GT(g.smem_per_block_optin, 0) << g.name;
    EXPECT_GE(g.cc_major, 7) << g.name;
    EXPECT_GE(g.clock_khz, 0);
    EXPECT_GE(g.memory_clock_khz, 0);
    EXPECT_GE(g.memory_bus_bits, 0);
    EXPECT_FALSE(g.driver.empty());
    EXPECT_FALSE(g.runtime.empty());
    EXPECT_EQ(parse_device(str("cuda:", g.index)), g.index);
  }
  EXPECT_EQ(parse_device("cuda"), 0);
  EXPECT_EQ(&list_gpus(), &list_gpus());
}

TEST(GpuHw, DeviceBufferRoundTrip) {
  if (dlas::list_gpus().empty()) GTEST_SKIP() << dlas::gpu_unavailable_reason();
  std::vector<float> host(1 << 20);
  std::iota(host.begin(), host.end(), -1000.5f);
  DeviceBuffer d = upload_floats(host.data(), host.size(), "round trip");
  ASSERT_NE(d.get(), nullptr);
  EXPECT_EQ(d.bytes(), host.size() * sizeof(float));
  std::vector<float> back(host.size(), 0.f);
  d.download(back.data(), back.size() * sizeof(float));
  EXPECT_EQ(std::memcmp(back.data(), host.data(), host.size() * sizeof(float)), 0);

  // A partial upload, a move, a move assignment over a live buffer, an empty buffer.
  const float three[3] = {1.f, 2.f, 3.f};
  DeviceBuffer e(64, "small");
  e.upload(three, sizeof(three));
  float got[3] = {};
  e.download(got, sizeof(got));
  EXPECT_EQ(got[2], 3.f);
  DeviceBuffer moved(std::move(e));
  EXPECT_EQ(e.get(), nullptr);
  EXPECT_EQ(moved.bytes(), 64u);
  moved = std::move(d);
  EXPECT_EQ(moved.bytes(), host.size() * sizeof(float));
  EXPECT_EQ(DeviceBuffer(0).get(), nullptr);
  // Copies larger than the buffer are dlas bugs, not device errors.
  try {
    moved.upload(host.data(), moved.bytes() + 4);
    ADD_FAILURE() << "oversized upload accepted";
  } catch (const Error& err) {
    EXPECT_EQ(err.kind(), ErrorKind::kInternal);
  }
}

TEST(GpuHw, CheckCudaNamesTheFailure) {
  if (dlas::list_gpus().empty()) GTEST_SKIP() << dlas::gpu_unavailable_reason();
  check_cuda(0, "success");
  try {
    check_cuda(2, "the probe");  // cudaErrorMemoryAllocation
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kRuntime);
    EXPECT_EQ(std::string(e.what()).rfind("the probe: ", 0), 0u) << e.what();
  }
}

TEST(GpuHw, PeakIsPositive) {
  if (dlas::list_gpus().empty()) GTEST_SKIP() << dlas::gpu_unavailable_reason();
  const GpuPeak p = measure_gpu_peak(0);
  EXPECT_EQ(p.index, 0);
  EXPECT_GT(p.fp32_tflops, 0);
  EXPECT_GT(p.fp16_tflops, 0);
  EXPECT_GT(p.tensor_fp16_tflops, 0);
  EXPECT_GT(p.copy_gbs, 0);
  EXPECT_GT(p.seconds, 0);
}

}  // namespace
}  // namespace dlas

// What the GPU tests share: the skip where no CUDA device is visible, and the comparison of
// a GPU output with the CPU engine's.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "dlas/core/tensor.h"
#include "dlas/hw/gpu.h"

#define SKIP_WITHOUT_GPU() \
  if (::dlas::list_gpus().empty()) GTEST_SKIP() << ::dlas::gpu_unavailable_reason()

namespace dlas::test {

// max |a - b| / max(1, max |b|): two outputs of one model.
inline double relative_error(const Tensor& a, const Tensor& b) {
  EXPECT_EQ(a.shape(), b.shape());
  const float* x = a.data<float>();
  const float* y = b.data<float>();
  double diff = 0, scale = 1;
  for (int64_t i = 0; i < b.numel(); ++i) {
    diff = std::max(diff, std::fabs(static_cast<double>(x[i]) - y[i]));
    scale = std::max(scale, std::fabs(static_cast<double>(y[i])));
  }
  return diff / scale;
}

}  // namespace dlas::test

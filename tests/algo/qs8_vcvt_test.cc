// The 8-bit (de)quantization row kernels (microkernels/qs8-vcvt) against ONNX QuantizeLinear /
// DequantizeLinear written out literally: ties to even, saturation, NaN to the zero point,
// u8 and s8, every length's tail. Kernels of ISAs this CPU lacks are skipped.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "algo/microkernels/qs8-vcvt/qs8_vcvt.h"
#include "dlas/algo/eltwise.h"
#include "dlas/algo/layout.h"
#include "dlas/hw/isa.h"
#include "dlas/hw/thread_pool.h"

namespace dlas {
namespace {

uint8_t quantize_literally(float x, const ukernel::QS8CvtParams& p) {
  const double lo = p.is_signed ? -128 : 0, hi = p.is_signed ? 127 : 255;
  const float r = x / p.scale;
  if (std::isnan(r)) return static_cast<uint8_t>(p.zero_point);
  double q = std::nearbyint(static_cast<double>(r)) + p.zero_point;  // ties to even
  q = std::min(hi, std::max(lo, q));
  return static_cast<uint8_t>(static_cast<int32_t>(q));
}

TEST(QS8Vcvt, RowsMatchQuantizeLinearLiterally) {
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> d(-40.f, 40.f);
  std::vector<float> x(1000);
  for (float& v : x) v = d(rng);
  // Exact ties (k + 0.5) * scale for scale 0.25, saturation, infinities, NaN, signed zero.
  const float special[] = {0.125f,
                           0.375f,
                           -0.125f,
                           -0.375f,
                           1e9f,
                           -1e9f,
                           std::numeric_limits<float>::infinity(),
                           -std::numeric_limits<float>::infinity(),
                           std::nanf(""),
                           -0.f};
  for (size_t i = 0; i < std::size(special); ++i) x[i * 7] = special[i];
  int checked = 0;
  for (const auto& k : ukernel::qs8_vcvt_kernels()) {
    if (!isa_supported(k.isa)) continue;
    ++checked;
    for (const ukernel::QS8CvtParams p :
         {ukernel::QS8CvtParams{0.25f, 128, false}, ukernel::QS8CvtParams{0.25f, 0, true},
          ukernel::QS8CvtParams{0.1f, 3, false}, ukernel::QS8CvtParams{0.3f, -5, true}}) {
      for (size_t n : {size_t{0}, size_t{1}, size_t{7}, size_t{8}, size_t{15}, size_t{17},
                       size_t{31}, size_t{1000}}) {
        std::vector<uint8_t> q(n + 1, 0xAB);
        k.quantize(n, x.data(), p, q.data());
        for (size_t i = 0; i < n; ++i)
          ASSERT_EQ(q[i], quantize_literally(x[i], p))
              << k.name << " x=" << x[i] << " scale=" << p.scale << " zp=" << p.zero_point
              << " s8=" << p.is_signed << " n=" << n << " i=" << i;
        EXPECT_EQ(q[n], 0xAB) << k.name << ": wrote past the row";
        std::vector<float> back(n + 1, -7.f);
        k.dequantize(n, q.data(), p, back.data());
        for (size_t i = 0; i < n; ++i) {
          const int32_t v = p.is_signed ? int32_t{static_cast<int8_t>(q[i])} : int32_t{q[i]};
          const float want = static_cast<float>(v - p.zero_point) * p.scale;
          ASSERT_EQ(std::memcmp(&back[i], &want, 4), 0) << k.name << " dequantize i=" << i;
        }
        EXPECT_EQ(back[n], -7.f) << k.name << ": wrote past the row";
      }
    }
  }
  EXPECT_GE(checked, 1);
}

}  // namespace
}  // namespace dlas

namespace dlas {
namespace {

// QChannelScale on blocked activations (gate per lane of a channel block) equals the same
// op on NCHW planes, byte for byte: 21 channels (a partial second block) of 7x7 pixels, two
// images, runs split over two threads at arbitrary points.
TEST(QS8Vcvt, BlockedChannelScaleEqualsThePlanarOne) {
  const int64_t n = 2, c = 21, hw = 49, B = 16, cp = blocked_channels(c, Layout::kNchw16c);
  std::mt19937 rng(9);
  std::uniform_real_distribution<float> d(-3.f, 3.f);
  std::vector<float> x(static_cast<size_t>(n * c * hw)), gate(static_cast<size_t>(n * c));
  for (float& v : x) v = d(rng);
  for (float& v : gate) v = d(rng);
  ThreadPool pool(2);
  std::vector<uint8_t> want(x.size());
  scale_quantize_8bit(DType::kU8, 0.05f, 128, active_isa(), static_cast<size_t>(n * c),
                      static_cast<size_t>(hw), x.data(), gate.data(), want.data(), pool);
  std::vector<float> xb(static_cast<size_t>(n * cp * hw)), gb(static_cast<size_t>(n * cp));
  reorder(x.data(), Layout::kNchw, xb.data(), Layout::kNchw16c, n, c, hw, pool);
  reorder(gate.data(), Layout::kNchw, gb.data(), Layout::kNchw16c, n, c, 1, pool);
  std::vector<uint8_t> yb(xb.size()), got(x.size());
  scale_quantize_8bit(DType::kU8, 0.05f, 128, active_isa(), static_cast<size_t>(n * cp / B),
                      static_cast<size_t>(hw * B), xb.data(), gb.data(), yb.data(), pool, B);
  reorder(yb.data(), Layout::kNchw16c, got.data(), Layout::kNchw, n, c, hw, pool);
  EXPECT_EQ(got, want);
}

}  // namespace
}  // namespace dlas

// Every f32 sparse spatial-pack kernel set (f32_sspack.inc, the test-only AVX-512 16-lane
// logic compiled for AVX2 included) x every tile shape against a scalar reference of the
// contract: random block counts (0, 1, many), taps at arbitrary (also decreasing) input
// offsets, the clamp, the reduction split into two accumulated halves whose last stores
// the tile transposed (channel-major), and no store past the VH x VW x VC tile.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "algo/microkernels/f32-sspack/f32_sspack.h"

namespace dlas::test {
namespace {

using ukernel::F32SspackUkernels;

void check_shape(const F32SspackUkernels& set, int nv, int vh, int vw, std::mt19937& rng) {
  const ukernel::F32SspackFn fn = set.select(nv, vh, vw);
  ASSERT_NE(fn, nullptr) << set.name << " nv " << nv << " " << vh << "x" << vw;
  const int vc = nv * set.lanes;
  const size_t rs = static_cast<size_t>(vw) + 5;  // floats between tile rows
  std::uniform_real_distribution<float> dist(-1.f, 1.f);
  std::vector<float> in(600 + static_cast<size_t>(vh) * rs);
  for (float& v : in) v = dist(rng);
  const float inf = std::numeric_limits<float>::infinity(), sentinel = 4242.f;
  for (int nblocks : {0, 1, 7, 40}) {
    std::uniform_int_distribution<int> tap(0, 599);
    std::vector<int> off(static_cast<size_t>(nblocks));
    for (int& o : off) o = tap(rng);
    // w: VC biases, then VC values per block (some exact zeros inside blocks).
    std::vector<float> w(static_cast<size_t>(vc * (nblocks + 1)));
    for (size_t i = 0; i < w.size(); ++i) w[i] = i % 5 == 3 ? 0.f : dist(rng);
    std::vector<int32_t> dmap;
    int prev = 0;
    for (int o : off) dmap.push_back((o - prev) * 4), prev = o;
    const size_t tile = static_cast<size_t>(vh * vw * vc);
    const float lo = nblocks == 7 ? -0.25f : -inf, hi = nblocks == 7 ? 0.5f : inf;
    std::vector<double> want(tile), mag(tile);
    for (int y = 0; y < vh; ++y)
      for (int x = 0; x < vw; ++x)
        for (int v = 0; v < vc; ++v) {
          const size_t i = static_cast<size_t>((y * vw + x) * vc + v);
          double acc = w[static_cast<size_t>(v)], m = std::fabs(acc);
          for (int z = 0; z < nblocks; ++z) {
            const double t = static_cast<double>(w[static_cast<size_t>(vc * (z + 1) + v)]) *
                             in[static_cast<size_t>(off[z]) + y * rs + x];
            acc += t, m += std::fabs(t);
          }
          want[i] = acc < lo ? lo : acc > hi ? hi : acc;
          mag[i] = m;
        }
    // Whole, then split in two halves (second: zero biases, accumulate).
    std::vector<float> got(tile + 16, sentinel), two(tile + 16, sentinel);
    fn(static_cast<size_t>(nblocks), in.data(), rs * 4, w.data(), dmap.data(), got.data(), lo, hi,
       false, false);
    const int half = nblocks / 2;
    fn(static_cast<size_t>(half), in.data(), rs * 4, w.data(), dmap.data(), two.data(), -inf, inf,
       false, false);
    std::vector<float> w2(static_cast<size_t>(vc * (nblocks - half + 1)), 0.f);
    for (int z = half; z < nblocks; ++z)
      for (int v = 0; v < vc; ++v)
        w2[static_cast<size_t>(vc * (z - half + 1) + v)] = w[static_cast<size_t>(vc * (z + 1) + v)];
    std::vector<int32_t> d2(dmap.begin() + half, dmap.end());
    if (!d2.empty()) d2[0] = off[static_cast<size_t>(half)] * 4;  // absolute again
    fn(static_cast<size_t>(nblocks - half), in.data(), rs * 4, w2.data(), d2.data(), two.data(), lo,
       hi, true, /*transpose=*/true);
    int bad = 0;
    for (size_t i = 0; i < tile + 16; ++i) {
      const double tol = 4 * 1.19e-7 * std::sqrt(nblocks + 1.0) * mag[i < tile ? i : 0] + 1e-6;
      // two[] is channel-major: two[(v * VH + y) * VW + x] holds want[(y * VW + x) * VC + v].
      const size_t pix = i / static_cast<size_t>(vc), v = i % static_cast<size_t>(vc);
      const size_t t = i < tile ? v * static_cast<size_t>(vh * vw) + pix : i;
      const bool ok = i < tile
                          ? std::fabs(got[i] - want[i]) <= tol && std::fabs(two[t] - want[i]) <= tol
                          : got[i] == sentinel && two[i] == sentinel;
      if (!ok && bad++ < 3)
        ADD_FAILURE() << set.name << " nv " << nv << " tile " << vh << "x" << vw << " blocks "
                      << nblocks << ": out[" << i << "] got " << got[i] << " split+transposed "
                      << two[t] << " want " << (i < tile ? want[i] : sentinel);
    }
  }
}

TEST(F32SspackUkernelTest, EverySetAndTileMatchesTheReference) {
  std::mt19937 rng(5);
  int tested = 0;
  for (const auto* list :
       {&ukernel::f32_sspack_ukernels(), &ukernel::f32_sspack_test_only_ukernels()})
    for (const F32SspackUkernels& set : *list) {
      if (!isa_supported(set.isa)) continue;
      for (int nv : ukernel::kSspackVectors)
        for (int vh : ukernel::kSspackVh)
          for (int vw : ukernel::kSspackVw) check_shape(set, nv, vh, vw, rng);
      ++tested;
    }
  EXPECT_GT(tested, 0);
}

TEST(F32SspackUkernelTest, LookupByChannels) {
  for (Isa isa : supported_isas())
    for (int vc : {8, 16}) {
      const F32SspackUkernels* set = ukernel::find_f32_sspack(isa, vc);
      ASSERT_NE(set, nullptr);
      EXPECT_LE(set->isa, isa);
      EXPECT_EQ(vc % set->lanes, 0);
    }
  // The AVX2 path runs VC = 16 as two ymm (x8), not the 16-lane logic-test set.
  if (isa_supported(Isa::kAvx2)) {
    EXPECT_EQ(ukernel::find_f32_sspack(Isa::kAvx2, 16)->lanes, 8);
  }
  if (isa_supported(Isa::kAvx512)) {
    EXPECT_EQ(ukernel::find_f32_sspack(Isa::kAvx512, 16)->lanes, 16);
    EXPECT_EQ(ukernel::find_f32_sspack(Isa::kAvx512, 8)->lanes, 8);
  }
  EXPECT_EQ(ukernel::find_f32_sspack(Isa::kAvx2, 12), nullptr);
}

}  // namespace
}  // namespace dlas::test

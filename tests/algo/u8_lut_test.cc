// The byte table lookups (u8-lut) of every ISA path the CPU runs, against table[x]: every
// byte value, lengths around the vector widths (tails), and a table whose rows all differ, so
// a kernel that picks the wrong 16-byte row or the wrong half fails.
//   build/dlas_tests --gtest_filter='U8Lut*'
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <vector>

#include "algo/conv_tester.h"
#include "algo/microkernels/u8-lut/u8_lut.h"
#include "dlas/hw/isa.h"

namespace dlas::test {
namespace {

class U8Lut : public ::testing::TestWithParam<Isa> {};

TEST_P(U8Lut, BytesAndFloatsEqualTheTable) {
  const Isa isa = GetParam();
  if (!isa_supported(isa)) GTEST_SKIP() << isa_name(isa) << " not supported here";
  const ukernel::U8Lut& lut = ukernel::u8_lut_for(isa);
  std::mt19937 rng(5);
  std::uniform_int_distribution<int> byte(0, 255);
  std::vector<uint8_t> table(256);
  std::vector<float> ftable(256);
  for (int i = 0; i < 256; ++i) {
    table[static_cast<size_t>(i)] = static_cast<uint8_t>(byte(rng));
    ftable[static_cast<size_t>(i)] = static_cast<float>(byte(rng)) * 0.25f - 7.f;
  }
  for (size_t n : {size_t{0}, size_t{1}, size_t{15}, size_t{16}, size_t{31}, size_t{32}, size_t{33},
                   size_t{63}, size_t{64}, size_t{65}, size_t{256}, size_t{1000}}) {
    std::vector<uint8_t> x(n);
    for (size_t i = 0; i < n; ++i)
      x[i] = n == 256 ? static_cast<uint8_t>(i) : static_cast<uint8_t>(byte(rng));
    // One guard byte / float after the output: the tails must not write past n.
    std::vector<uint8_t> y(n + 1, 0xA5);
    std::vector<float> fy(n + 1, -1.f);
    lut.bytes(n, x.data(), table.data(), y.data());
    for (size_t i = 0; i < n; ++i)
      ASSERT_EQ(y[i], table[x[i]]) << lut.name << " n " << n << " at " << i << " x " << int(x[i]);
    EXPECT_EQ(y[n], 0xA5) << lut.name << " n " << n;
    // The float kernel chosen here, and on AVX-512 both candidates (the choice is timed).
    std::vector<ukernel::U8LutF32Fn> floats{lut.floats};
    if (isa >= Isa::kAvx512)
      floats.insert(floats.end(),
                    {&ukernel::u8_lut__avx512_floats, &ukernel::u8_lut__avx512_permute_floats});
    for (size_t f = 0; f < floats.size(); ++f) {
      std::fill(fy.begin(), fy.end(), -1.f);
      floats[f](n, x.data(), ftable.data(), fy.data());
      for (size_t i = 0; i < n; ++i)
        ASSERT_EQ(fy[i], ftable[x[i]])
            << lut.name << " float kernel " << f << " n " << n << " at " << i << " x " << int(x[i]);
      EXPECT_EQ(fy[n], -1.f) << lut.name << " float kernel " << f << " n " << n;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Isa, U8Lut, ::testing::ValuesIn(kAllIsas),
                         [](const auto& info) { return isa_test_name(info.param); });

}  // namespace
}  // namespace dlas::test
